//! `kudo_instance`: an Instance of an installed operator and everything its plans create.

use std::collections::BTreeMap;
use std::time::Duration;

use tfplugin::{
    ApplyRequest, ApplyResponse, AttributePath, Diagnostic, ImportResponse, ImportedResource,
    PlanRequest, PlanResponse, ReadRequest, ReadResponse, Value,
};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, Cleanup, RunRequest};
use kudo_package::Package;
use kudo_plan::{Concern, Desired, Inputs, LastRun, Prior, WantedChange};

use super::children;
use super::packages::{self, PlanCache, parse_operator_id};
use super::sensitive::{self, sensitive_of};
use super::timeouts::{self, DEFAULT_CREATE, DEFAULT_DELETE, DEFAULT_UPDATE};
use super::{Session, namespace_of, render_seed, schema};

pub const STATUS_COMPLETE: &str = "COMPLETE";
/// Reported by a refresh that finds a managed object gone; the next plan repairs it.
pub const STATUS_DRIFTED: &str = "DRIFTED";

/// A `map(string)` attribute; null counts as empty. `None` while unknown.
fn string_map_of(v: &Value, attr: &str) -> Option<BTreeMap<String, String>> {
    match v.get(attr) {
        Value::Unknown => None,
        p => Some(p.to_string_map().ok().flatten().unwrap_or_default()),
    }
}

fn parameters_of(v: &Value) -> Option<BTreeMap<String, String>> {
    string_map_of(v, "parameters")
}

/// `parameters` and `sensitive_parameters` together, as templates see them.
fn all_parameters_of(v: &Value) -> Result<Option<BTreeMap<String, String>>, Vec<Diagnostic>> {
    sensitive::merge(parameters_of(v).as_ref(), sensitive_of(v).as_ref())
}

fn object_value(r: &ObjectRef, uid: Option<&str>) -> Value {
    Value::object([
        ("api_version", Value::string(&r.api_version)),
        ("kind", Value::string(&r.kind)),
        (
            "namespace",
            Value::string(r.namespace.clone().unwrap_or_default()),
        ),
        ("name", Value::string(&r.name)),
        ("uid", uid.map_or(Value::Null, Value::string)),
    ])
}

/// The `objects` entries with the uid each had when last read. The uid stays out of
/// `ObjectRef`: the engine compares inventories by identity, which a re-created object
/// keeps.
fn object_entries(v: &Value) -> Vec<(ObjectRef, Option<String>)> {
    v.get("objects")
        .as_slice()
        .unwrap_or_default()
        .iter()
        .filter_map(|o| {
            let r = ObjectRef::new(
                o.get("api_version").as_str()?,
                o.get("kind").as_str()?,
                o.get("namespace").as_str().filter(|s| !s.is_empty()),
                o.get("name").as_str()?,
            );
            Some((r, o.get("uid").as_str().map(str::to_string)))
        })
        .collect()
}

fn objects_of(v: &Value) -> Vec<ObjectRef> {
    object_entries(v).into_iter().map(|(r, _)| r).collect()
}

fn uid_of(object: &serde_json::Value) -> Option<&str> {
    object
        .pointer("/metadata/uid")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}

/// How many objects are read at once: enough to hide round trips, few enough not to
/// trip the API server's rate limits.
const PARALLEL_READS: usize = 8;

/// The uid each object has in the cluster now, None for objects that are gone. A run's
/// inventory holds objects it did not apply (kept from earlier runs) and ones it only
/// found settled, so reading them back is the one way to know every uid.
async fn cluster_uids(
    cluster: &Cluster,
    objects: &[ObjectRef],
) -> Result<Vec<Option<String>>, kudo_engine::cluster::ClusterError> {
    use futures::{StreamExt, TryStreamExt};
    // Futures built up front, not in a stream closure: a closure borrowing `cluster`
    // makes the future not provably `Send` for the async trait.
    let reads: Vec<_> = objects.iter().map(|r| uid_in(cluster, r)).collect();
    futures::stream::iter(reads)
        .buffered(PARALLEL_READS)
        .try_collect()
        .await
}

async fn uid_in(
    cluster: &Cluster,
    r: &ObjectRef,
) -> Result<Option<String>, kudo_engine::cluster::ClusterError> {
    Ok(cluster
        .get(r)
        .await?
        .as_ref()
        .and_then(uid_of)
        .map(str::to_string))
}

/// The `objects` value of a finished apply. A failed read leaves the uids null rather
/// than failing an apply whose objects exist: the next refresh fills them in.
async fn objects_value(cluster: &Cluster, objects: &[ObjectRef]) -> Value {
    let uids = match cluster_uids(cluster, objects).await {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the uids of the managed objects");
            vec![None; objects.len()]
        }
    };
    Value::list(
        objects
            .iter()
            .zip(uids)
            .map(|(r, uid)| object_value(r, uid.as_deref())),
    )
}

/// `crd_deletion`, unset meaning the default. An invalid value is reported by
/// [`validate`]; where it reaches here anyway the default (which loses nothing) applies.
fn crd_deletion_of(v: &Value) -> engine::CrdDeletion {
    v.get("crd_deletion")
        .as_str()
        .and_then(engine::CrdDeletion::parse)
        .unwrap_or_default()
}

pub fn validate(config: &Value) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if let Some(v) = config.get("crd_deletion").as_str()
        && engine::CrdDeletion::parse(v).is_none()
    {
        diags.push(
            Diagnostic::error(
                "Invalid crd_deletion",
                format!(
                    "{v:?} is not a choice; set `crd_deletion` to one of {}, or leave it unset for \"when-unused\".",
                    engine::CrdDeletion::VALUES
                        .iter()
                        .map(|c| format!("{c:?}"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            )
            .with_attribute(AttributePath::attribute("crd_deletion")),
        );
    }
    if let Some(id) = config.get("operator").as_str()
        && parse_operator_id(id).is_none()
    {
        diags.push(
            Diagnostic::error(
                "Invalid operator reference",
                format!("{id:?} is not a kudo_operator id (`<namespace>/<operatorversion-name>`); set `operator = kudo_operator.<name>.id`."),
            )
            .with_attribute(AttributePath::attribute("operator")),
        );
    }
    if let Some(t) = config.get("timeouts").as_map() {
        for (op, v) in t {
            if let Some(text) = v.as_str()
                && timeouts::parse_duration(text).is_none()
            {
                diags.push(
                    Diagnostic::error(
                        "Invalid timeout",
                        format!(
                            "{text:?} is not a duration; write it like `30s`, `10m` or `1h30m`."
                        ),
                    )
                    .with_attribute(AttributePath::attribute("timeouts").attr(op)),
                );
            }
        }
    }
    diags
}

/// The package an instance runs. While planning, the copy `kudo_operator` just planned
/// wins (it is what the apply will install); otherwise the cluster is asked.
async fn find_package(
    session: &Session,
    operator_id: &str,
    planning: bool,
) -> Result<Option<Package>, Diagnostic> {
    let Some((ns, ov_name)) = parse_operator_id(operator_id) else {
        return Ok(None);
    };
    let cache = PlanCache::from_env();
    if planning && let Some(pkg) = cache.load(ns, ov_name) {
        return Ok(Some(pkg));
    }
    let from_cluster = async {
        let cluster = session.cluster().await?;
        engine::load_operator(&cluster, ns, ov_name)
            .await
            .map_err(|e| session.engine_error("Cannot read the operator", &e))
    };
    match from_cluster.await {
        Ok(Some(pkg)) => Ok(Some(pkg)),
        Ok(None) => Ok(cache.load(ns, ov_name)),
        // A plan can still go ahead without the package; the apply will need the cluster.
        Err(d) if planning => {
            tracing::debug!(detail = %d.detail, "package not available while planning");
            Ok(None)
        }
        Err(d) => Err(d),
    }
}

fn parameter_diagnostics(
    pkg: &Package,
    params: &BTreeMap<String, String>,
    secret: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Vec<Diagnostic>> {
    pkg.effective_params(params).map_err(|errs| {
        errs.into_iter()
            .map(|e| {
                let path = if secret.contains_key(&e.parameter) {
                    AttributePath::attribute(sensitive::ATTR).key(e.parameter.clone())
                } else if params.contains_key(&e.parameter) {
                    AttributePath::attribute("parameters").key(e.parameter.clone())
                } else {
                    AttributePath::attribute("parameters")
                };
                Diagnostic::error(
                    format!("Invalid parameter {}", e.parameter),
                    format!(
                        "{}.\nOperator {} {} declares: {}.\n\nCorrect the parameter's name or value, {}",
                        sensitive::redact(&e.to_string(), secret),
                        pkg.operator.name,
                        pkg.operator.operator_version,
                        pkg.parameters
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        super::diag::AGAIN
                    ),
                )
                .with_attribute(path)
            })
            .collect()
    })
}

/// Renders the package's `outputs:` templates with the instance's variables. Plan,
/// phase and step names are empty: outputs are computed while planning, and must come
/// out the same when the apply recomputes them.
fn render_outputs(
    pkg: &Package,
    name: &str,
    namespace: &str,
    effective: &BTreeMap<String, String>,
    seed: Option<&str>,
) -> Result<BTreeMap<String, String>, Diagnostic> {
    let params = pkg.template_params(effective).map_err(|e| {
        Diagnostic::error("Invalid parameter", e.to_string())
            .with_attribute(AttributePath::attribute("parameters").key(e.parameter.clone()))
    })?;
    let vars = kudo_template::Vars {
        operator_name: pkg.operator.name.clone(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        operator_version: pkg.operator.operator_version.clone(),
        app_version: pkg.operator.app_version.clone().unwrap_or_default(),
        plan_name: String::new(),
        phase_name: String::new(),
        step_name: String::new(),
        params,
        pipes: BTreeMap::new(),
    };
    let options = kudo_template::RenderOptions {
        now: None,
        seed: seed.map(str::to_string),
    };
    pkg.operator
        .outputs
        .iter()
        .map(|(key, template)| {
            kudo_template::render_with(
                &format!("operator.yaml outputs.{key}"),
                template,
                &vars,
                &options,
            )
            .map(|v| (key.clone(), v))
            .map_err(|e| {
                Diagnostic::error(
                    format!(
                        "Output {key} of operator {} does not render",
                        pkg.operator.name
                    ),
                    format!(
                        "{e}\n\nFix the template under `outputs:` in the package's operator.yaml, {}",
                        super::diag::AGAIN
                    ),
                )
                .with_attribute(AttributePath::attribute("operator"))
            })
        })
        .collect()
}

/// The render seed as a plan knows it.
enum PlanSeed {
    /// The instance's own (`None`: it has none, see `render_seed`).
    Known(Option<String>),
    /// The instance is created by this apply, which draws its seed then: Terraform plans
    /// a create again during the apply without this plan's private state, so a seed
    /// drawn while planning could not reach the apply.
    AtApply,
}

/// Two seeds no instance has: what renders alike with both does not depend on the seed.
const PROBE_SEEDS: [&str; 2] = ["kudo-plan-probe-1", "kudo-plan-probe-2"];

impl PlanSeed {
    /// The seed to render with where one render must do (the preview's dry-run).
    fn known(&self) -> Option<&str> {
        match self {
            PlanSeed::Known(s) => s.as_deref(),
            PlanSeed::AtApply => None,
        }
    }
}

/// `a` where `b` agrees, unknown where they differ: of a value rendered with two probe
/// seeds, the part that does not depend on the seed, which the plan can promise.
fn known_part(a: Value, b: &Value) -> Value {
    if a == *b {
        return a;
    }
    match (a, b) {
        (Value::List(x), Value::List(y)) if x.len() == y.len() => Value::List(
            x.into_iter()
                .zip(y)
                .map(|(x, y)| known_part(x, y))
                .collect(),
        ),
        (Value::Map(x), Value::Map(y)) if x.keys().eq(y.keys()) => Value::Map(
            x.into_iter()
                .zip(y.values())
                .map(|((k, x), y)| (k, known_part(x, y)))
                .collect(),
        ),
        (Value::Object(x), Value::Object(y)) if x.keys().eq(y.keys()) => Value::Object(
            x.into_iter()
                .zip(y.values())
                .map(|((k, x), y)| (k, known_part(x, y)))
                .collect(),
        ),
        _ => Value::Unknown,
    }
}

/// `outputs` while planning, rendered as the apply will render them.
fn planned_outputs(
    pkg: &Package,
    name: &str,
    namespace: &str,
    effective: &BTreeMap<String, String>,
    secret: &BTreeMap<String, String>,
    seed: &PlanSeed,
) -> Result<Value, Diagnostic> {
    let render = |seed: Option<&str>| {
        render_outputs(pkg, name, namespace, effective, seed)
            .and_then(|o| sensitive::check_outputs(&o, secret).map(|()| string_map(&o)))
    };
    match seed {
        PlanSeed::Known(s) => render(s.as_deref()),
        PlanSeed::AtApply => {
            let a = render(Some(PROBE_SEEDS[0]))?;
            Ok(known_part(a, &render(Some(PROBE_SEEDS[1]))?))
        }
    }
}

/// `children` while planning: unknown until the package, parameters and name are.
#[allow(clippy::too_many_arguments)]
async fn planned_children(
    session: &Session,
    operator: &Option<String>,
    pkg: &Option<Package>,
    name: &Option<String>,
    namespace: &str,
    params: &Option<BTreeMap<String, String>>,
    seed: &PlanSeed,
) -> Result<Value, Diagnostic> {
    let (Some(operator), Some(pkg), Some(name), Some(params)) = (operator, pkg, name, params)
    else {
        return Ok(Value::Unknown);
    };
    let tree = |seed: Option<&str>| {
        let seed = seed.map(str::to_string);
        async move {
            children::tree(
                session,
                operator,
                pkg,
                name,
                namespace,
                params,
                seed.as_deref(),
                true,
            )
            .await
        }
    };
    match seed {
        PlanSeed::Known(s) => Ok(tree(s.as_deref())
            .await?
            .map_or(Value::Unknown, |t| t.value())),
        PlanSeed::AtApply => match (
            tree(Some(PROBE_SEEDS[0])).await?,
            tree(Some(PROBE_SEEDS[1])).await?,
        ) {
            (Some(a), Some(b)) => Ok(known_part(a.value(), &b.value())),
            _ => Ok(Value::Unknown),
        },
    }
}

fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::string_map(m.iter().map(|(k, v)| (k.clone(), v.clone())))
}

pub async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
    // Private state carries the render seed; a plan must hand it on unchanged. A create
    // (a replacement's included: Terraform then passes the old object's private state)
    // hands on none, so the new object gets a seed of its own.
    let (seed, planned_private) = if req.prior_state.is_null() {
        (PlanSeed::AtApply, Vec::new())
    } else {
        (
            PlanSeed::Known(render_seed::from_private(&req.prior_private)),
            req.prior_private.clone(),
        )
    };
    let mut resp = plan_inner(session, req, &seed).await;
    resp.planned_private = planned_private;
    resp
}

async fn plan_inner(session: &Session, req: PlanRequest, seed: &PlanSeed) -> PlanResponse {
    let proposed = req.proposed_new_state;
    let prior = req.prior_state;
    if proposed.is_null() {
        return PlanResponse::default();
    }
    let schema = schema::instance();
    let namespace = namespace_of(&proposed);
    let name = proposed.get("name").as_str().map(str::to_string);
    let mut planned = proposed.clone();
    planned.set_attr("namespace", Value::string(&namespace));
    planned.set_attr(
        "id",
        name.as_ref().map_or(Value::Unknown, |n| {
            Value::string(format!("{namespace}/{n}"))
        }),
    );

    if let Some(prior_name) = prior.get("name").as_str() {
        session.remember_instance(&namespace_of(&prior), prior_name);
    }
    // A new resource must not find its Instance there already (someone else's). Checked
    // whenever the cluster can be reached while planning, except for an instance this
    // run's state holds (the create half of a replacement); the apply checks again.
    if prior.is_null()
        && let Some(name) = &name
        && !session.knows_instance(&namespace, name)
        && let Ok(cluster) = session.cluster().await
        && let Err(d) = super::existing::check_absent(session, &cluster, &namespace, name).await
    {
        return PlanResponse {
            diagnostics: vec![d],
            ..Default::default()
        };
    }

    let mut diagnostics = Vec::new();
    let operator = proposed.get("operator").as_str().map(str::to_string);
    let params = match all_parameters_of(&proposed) {
        Ok(p) => p,
        Err(diagnostics) => {
            return PlanResponse {
                diagnostics,
                ..Default::default()
            };
        }
    };
    let secret = sensitive_of(&proposed).unwrap_or_default();
    let pkg = match &operator {
        Some(id) => match find_package(session, id, true).await {
            Ok(p) => p,
            Err(d) => {
                return PlanResponse {
                    diagnostics: vec![d],
                    ..Default::default()
                };
            }
        },
        None => None,
    };

    if let (Some(pkg), Some(triggers)) = (&pkg, string_map_of(&proposed, "plan_triggers")) {
        let unknown: Vec<Diagnostic> = triggers
            .keys()
            .filter(|plan| !pkg.operator.plans.contains_key(*plan))
            .map(|plan| {
                Diagnostic::error(
                    format!("No plan {plan}"),
                    format!(
                        "Operator {} has no plan {plan:?}; it has: {}.",
                        pkg.operator.name,
                        pkg.operator
                            .plans
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .with_attribute(AttributePath::attribute("plan_triggers").key(plan.clone()))
            })
            .collect();
        if !unknown.is_empty() {
            return PlanResponse {
                diagnostics: unknown,
                ..Default::default()
            };
        }
    }

    let mut effective = None;
    if let (Some(pkg), Some(params)) = (&pkg, &params) {
        match parameter_diagnostics(pkg, params, &secret) {
            Ok(e) => effective = Some(e),
            Err(d) => {
                return PlanResponse {
                    diagnostics: d,
                    ..Default::default()
                };
            }
        }
    }
    let digest = pkg.as_ref().map(packages::digest);
    let outputs = match (&pkg, &effective, &name) {
        (Some(pkg), Some(effective), Some(name)) => {
            match planned_outputs(pkg, name, &namespace, effective, &secret, seed) {
                Ok(o) => o,
                Err(d) => {
                    return PlanResponse {
                        diagnostics: vec![d],
                        ..Default::default()
                    };
                }
            }
        }
        _ => Value::Unknown,
    };
    planned.set_attr("outputs", outputs);
    match planned_children(session, &operator, &pkg, &name, &namespace, &params, seed).await {
        Ok(children) => planned.set_attr("children", children),
        Err(d) => {
            return PlanResponse {
                diagnostics: vec![d],
                ..Default::default()
            };
        }
    };

    let replacing = !schema.requires_replace(&prior, &planned).is_empty();
    let Some(triggers) = string_map_of(&proposed, "plan_triggers") else {
        // Which plan runs depends on a value Terraform does not know yet.
        return PlanResponse {
            planned_state: schema.mark_computed_unknown(&planned),
            ..Default::default()
        };
    };
    let plan_to_run: Option<Value> = match (&pkg, &params) {
        (Some(pkg), Some(new_params)) => {
            let children_changed = children::children_changed(&prior, &planned);
            match decide_plan(
                &prior,
                replacing,
                pkg,
                new_params,
                &triggers,
                children_changed,
            ) {
                Ok(plan) => plan.map(Value::string),
                Err(d) => {
                    return PlanResponse {
                        diagnostics: vec![d],
                        ..Default::default()
                    };
                }
            }
        }
        // Without the package or the parameters only a create is certain, and an
        // instance nothing about has changed stays as it is.
        _ if prior.is_null() || replacing => Some(Value::string("deploy")),
        _ if params.is_some()
            && params == all_parameters_of(&prior).ok().flatten()
            && proposed.get("operator") == prior.get("operator")
            && Some(&triggers) == string_map_of(&prior, "plan_triggers").as_ref()
            && prior.get("status").as_str() == Some(STATUS_COMPLETE) =>
        {
            None
        }
        _ => Some(Value::Unknown),
    };

    if pkg.is_none() && operator.is_some() {
        diagnostics.push(Diagnostic::warning(
            "Parameters not checked",
            "The operator package is neither planned in this configuration nor installed yet, so parameters will be checked when the apply runs.",
        ));
    }
    // Walk what the apply will walk, so that whatever fails without a cluster (template
    // mistakes, a Toggle or enablingParameter that is not a boolean) fails the plan with
    // the apply's own words rather than half-way through the apply.
    let desired = match (&pkg, &params, &name) {
        (Some(pkg), Some(params), Some(name)) => {
            match Desired::new(Inputs {
                package: pkg,
                instance: name,
                namespace: &namespace,
                parameters: params,
                seed: seed.known(),
                dependencies: None,
            }) {
                Ok(d) => Some(d),
                Err(e) => return walk_failure(pkg, &secret, e),
            }
        }
        _ => None,
    };
    if let (Some(desired), Some(Value::String(plan_name))) = (&desired, &plan_to_run)
        && let Err(e) = desired.plan(plan_name)
        && let Some(pkg) = &pkg
    {
        return walk_failure(pkg, &secret, e);
    }
    let (preview, warning) = match (&desired, &plan_to_run) {
        (Some(desired), Some(Value::String(plan_name))) => {
            plan_preview(session, desired, plan_name, &prior, params.as_ref()).await
        }
        _ => (Value::Unknown, Vec::new()),
    };
    diagnostics.extend(warning);
    planned.set_attr(super::preview::ATTR, preview);
    finish_plan(
        &schema,
        &prior,
        planned,
        plan_to_run,
        effective.map(|e| sensitive::strip(e, &secret)),
        digest,
        diagnostics,
    )
}

/// The plan a change runs (`None`: nothing runs), by the one rule of
/// [`kudo_plan::decide`]; this only reads the prior state's attributes into it and its
/// refusals into diagnostics on the attribute concerned.
fn decide_plan(
    prior: &Value,
    replacing: bool,
    pkg: &Package,
    params: &BTreeMap<String, String>,
    triggers: &BTreeMap<String, String>,
    children_changed: bool,
) -> Result<Option<String>, Diagnostic> {
    let old_params = all_parameters_of(prior).ok().flatten().unwrap_or_default();
    let old_triggers = string_map_of(prior, "plan_triggers").unwrap_or_default();
    let old_ov = prior
        .get("operator")
        .as_str()
        .and_then(parse_operator_id)
        .map(|(_, ov)| ov.to_string())
        .unwrap_or_default();
    let digest = packages::digest(pkg);
    let last_run = match prior.get("status").as_str() {
        Some(STATUS_COMPLETE) => LastRun::Complete,
        Some(STATUS_DRIFTED) => LastRun::Drifted,
        Some(other) => LastRun::Unfinished(other.to_string()),
        None => LastRun::Unfinished("unknown".to_string()),
    };
    let prior_model = Prior {
        operator_version: &old_ov,
        parameters: &old_params,
        last_plan: prior.get("last_plan").as_str(),
        last_run,
        digest: prior.get("operator_digest").as_str(),
        plan_triggers: &old_triggers,
    };
    let wanted = WantedChange {
        package: pkg,
        parameters: params,
        digest: Some(&digest),
        plan_triggers: triggers,
        children_changed,
    };
    let exists = !prior.is_null() && !replacing;
    match kudo_plan::decide(exists.then_some(&prior_model), &wanted) {
        Ok(decision) => Ok(decision.plan().map(str::to_string)),
        Err(e) => {
            let (summary, attribute) = match e.concern {
                Concern::PlanTriggers => ("One plan per apply", "plan_triggers"),
                Concern::ImmutableParameter => ("Parameter cannot change", "parameters"),
                Concern::Parameters => ("Cannot choose the plan to run", "parameters"),
            };
            Err(Diagnostic::error(summary, e.error.message)
                .with_attribute(AttributePath::attribute(attribute)))
        }
    }
}

/// The plan's error for what the walk rejects: the text the apply would fail with.
fn walk_failure(
    pkg: &Package,
    secret: &BTreeMap<String, String>,
    e: kudo_plan::PlanError,
) -> PlanResponse {
    // A switch parameter (Toggle, enablingParameter) is the user's to fix; everything
    // else the walk rejects is rendering.
    let (summary, advice) = if e.parameter.is_some() {
        (
            format!(
                "Operator {} cannot run with these parameters",
                pkg.operator.name
            ),
            "Set the parameter named above to true or false",
        )
    } else {
        (
            format!("Operator {} does not render", pkg.operator.name),
            "Fix the template named above in the operator package, or the parameter value it uses",
        )
    };
    let e = engine::EngineError::from(e);
    let detail = super::diag::with_advice(
        sensitive::redact(&e.to_string(), secret),
        &format!("{advice}, {}", super::diag::AGAIN),
    );
    PlanResponse {
        diagnostics: vec![
            Diagnostic::error(summary, detail)
                .with_attribute(AttributePath::attribute("parameters")),
        ],
        ..Default::default()
    }
}

/// The `preview` attribute and its diagnostics: a warning per translated object, a
/// warning when it cannot be computed, an error when the apply could never send an
/// object. Unknown, without a warning, when the cluster is not available yet.
async fn plan_preview(
    session: &Session,
    desired: &Desired<'_>,
    plan_name: &str,
    prior: &Value,
    params: Option<&BTreeMap<String, String>>,
) -> (Value, Vec<Diagnostic>) {
    let pkg = desired.inputs.package;
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => {
            tracing::debug!(detail = %d.detail, "no preview: cluster not reachable while planning");
            return (Value::Unknown, Vec::new());
        }
    };
    let previous = objects_of(prior);
    // Object contents can be compared only with what the same package rendered.
    let same_package = prior
        .get("operator")
        .as_str()
        .and_then(parse_operator_id)
        .is_some_and(|(_, ov)| ov == pkg.operator_version_name())
        && prior.get("operator_digest").as_str() == Some(packages::digest(pkg).as_str());
    let old_params = all_parameters_of(prior).ok().flatten();
    let prior_run = super::preview::Prior {
        objects: &previous,
        parameters: old_params.as_ref().filter(|_| same_package),
    };
    let _ = params;
    match super::preview::compute(&cluster, desired, plan_name, &prior_run).await {
        Ok((v, warnings)) => (v, warnings),
        Err(super::preview::PreviewError::Unknown(d)) => (Value::Unknown, vec![d]),
        Err(super::preview::PreviewError::Refused { summary, error }) => {
            (Value::Unknown, vec![session.engine_error(summary, &error)])
        }
    }
}

/// Fills the computed attributes: kept from the prior state when no plan runs, else
/// the plan's name and unknowns for what the run decides.
fn finish_plan(
    schema: &tfplugin::Schema,
    prior: &Value,
    mut planned: Value,
    plan_to_run: Option<Value>,
    effective: Option<BTreeMap<String, String>>,
    digest: Option<String>,
    diagnostics: Vec<Diagnostic>,
) -> PlanResponse {
    match plan_to_run {
        None => {
            // Nothing to do: keep what the state says.
            for attr in [
                "status",
                "last_plan",
                "objects",
                "effective_parameters",
                "operator_digest",
                "outputs",
                super::preview::ATTR,
            ] {
                planned.set_attr(attr, prior.get(attr).clone());
            }
        }
        Some(plan_name) => {
            planned.set_attr("last_plan", plan_name);
            planned.set_attr("status", Value::Unknown);
            planned.set_attr("objects", Value::Unknown);
            planned.set_attr(
                "effective_parameters",
                effective.as_ref().map_or(Value::Unknown, string_map),
            );
            planned.set_attr(
                "operator_digest",
                digest.map_or(Value::Unknown, Value::string),
            );
        }
    }
    PlanResponse {
        requires_replace: schema.requires_replace(prior, &planned),
        planned_state: planned,
        planned_private: Vec::new(),
        diagnostics,
    }
}

fn engine_diagnostic(session: &Session, summary: &str, e: &engine::EngineError) -> Diagnostic {
    with_template_attribute(session.engine_error(summary, e), e)
}

/// [`engine_diagnostic`] of a failed destroy.
fn destroy_diagnostic(session: &Session, summary: &str, e: &engine::EngineError) -> Diagnostic {
    with_template_attribute(session.destroy_error(summary, e), e)
}

fn with_template_attribute(d: Diagnostic, e: &engine::EngineError) -> Diagnostic {
    // A rendered object the cluster rejected: its values come from the parameters.
    match &e.template {
        Some(_) => d.with_attribute(AttributePath::attribute("parameters")),
        None => d,
    }
}

/// A cancellation token that fires when Terraform stops the provider or after `limit`
/// (the `timeouts` block). Cancelling, rather than dropping the work, lets the engine
/// say which object it was still waiting for.
struct Deadline {
    token: CancellationToken,
    timer: tokio::task::JoinHandle<()>,
    limit: Duration,
}

impl Deadline {
    fn new(stop: &CancellationToken, limit: Duration) -> Deadline {
        let token = stop.child_token();
        let fire = token.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            fire.cancel();
        });
        Deadline {
            token,
            timer,
            limit,
        }
    }

    /// Says which limit cut the work short, when one did.
    fn explain<T>(
        self,
        stop: &CancellationToken,
        what: &str,
        result: &mut Result<T, engine::EngineError>,
    ) {
        self.timer.abort();
        if let Err(e) = result
            && e.is_cancelled()
            && !stop.is_cancelled()
        {
            e.message = format!(
                "{what} did not finish within the {}s allowed by `timeouts`: {}. Raise the timeout or fix what is not becoming ready",
                self.limit.as_secs(),
                e.message
            );
        }
    }
}

pub async fn apply(
    session: &Session,
    req: ApplyRequest,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let seed = match render_seed::for_apply(req.prior_state.is_null(), &req.planned_private) {
        Ok(s) => s,
        Err(d) => {
            return ApplyResponse {
                new_state: req.prior_state,
                diagnostics: vec![d],
                ..Default::default()
            };
        }
    };
    let mut resp = apply_inner(session, req, seed.as_deref(), cancel).await;
    // Every outcome that leaves an instance in state keeps the seed, failures included:
    // a lost seed would change generated passwords on the next run.
    if !resp.new_state.is_null() {
        resp.private = seed
            .as_deref()
            .map(render_seed::to_private)
            .unwrap_or_default();
    }
    resp
}

async fn apply_inner(
    session: &Session,
    req: ApplyRequest,
    seed: Option<&str>,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let prior = req.prior_state;
    let planned = req.planned_state;
    let fail = |state: Value, d: Diagnostic| ApplyResponse {
        new_state: state,
        diagnostics: vec![d],
        ..Default::default()
    };
    let command = match planned.is_null() {
        true => super::diag::Command::Destroy,
        false => super::diag::Command::Apply,
    };
    let cluster = match session.cluster_for(command).await {
        Ok(c) => c,
        Err(d) => return fail(prior, d),
    };
    if planned.is_null() {
        return destroy(session, &cluster, prior, seed, cancel).await;
    }

    let namespace = namespace_of(&planned);
    let name = planned.get("name").as_str().unwrap_or_default().to_string();
    if prior.is_null()
        && let Err(d) = super::existing::check_absent(session, &cluster, &namespace, &name).await
    {
        return fail(prior, d);
    }
    let operator = planned
        .get("operator")
        .as_str()
        .unwrap_or_default()
        .to_string();
    let pkg = match find_package(session, &operator, false).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(
                prior,
                Diagnostic::error(
                    "Operator not installed",
                    format!("There is no OperatorVersion for {operator:?} in the cluster. Install it with a kudo_operator resource and reference its id."),
                )
                .with_attribute(AttributePath::attribute("operator")),
            );
        }
        Err(d) => return fail(prior, d),
    };
    let public = parameters_of(&planned).unwrap_or_default();
    let secret = sensitive_of(&planned).unwrap_or_default();
    let params = match sensitive::merge(Some(&public), Some(&secret)) {
        Ok(p) => p.unwrap_or_default(),
        Err(diagnostics) => {
            return ApplyResponse {
                new_state: prior,
                diagnostics,
                ..Default::default()
            };
        }
    };
    let effective = match parameter_diagnostics(&pkg, &params, &secret) {
        Ok(e) => e,
        Err(d) => {
            return ApplyResponse {
                new_state: prior,
                diagnostics: d,
                ..Default::default()
            };
        }
    };
    let plan_name = planned
        .get("last_plan")
        .as_str()
        .unwrap_or("deploy")
        .to_string();
    let (operation, default_limit) = if prior.is_null() {
        ("create", DEFAULT_CREATE)
    } else {
        ("update", DEFAULT_UPDATE)
    };
    let limit = match timeouts::timeout(&planned, operation, default_limit) {
        Ok(l) => l,
        Err(d) => return fail(prior, d),
    };
    // Outputs were checked while planning; computing them before the run means a
    // surprise here cannot lose the record of what the run created.
    let outputs = match render_outputs(&pkg, &name, &namespace, &effective, seed)
        .and_then(|o| sensitive::check_outputs(&o, &secret).map(|()| o))
    {
        Ok(o) => o,
        Err(d) => return fail(prior, d),
    };
    let tree = match children::tree(
        session, &operator, &pkg, &name, &namespace, &params, seed, false,
    )
    .await
    {
        Ok(t) => t.unwrap_or_default(),
        Err(d) => return fail(prior, d),
    };
    let previous = objects_of(&prior);
    let deadline = Deadline::new(cancel, limit);
    let mut run = engine::run_plan_with_sensitive(
        &cluster,
        RunRequest {
            dependencies: Some(&tree.packages),
            package: &pkg,
            instance: &name,
            namespace: &namespace,
            parameters: &public,
            plan: &plan_name,
            previous_inventory: &previous,
            render_seed: seed,
            crd_deletion: crd_deletion_of(&planned),
        },
        &secret,
        &deadline.token,
    )
    .await;
    deadline.explain(cancel, &format!("plan {plan_name:?}"), &mut run);
    let mut state = planned.clone();
    state.set_attr("id", Value::string(format!("{namespace}/{name}")));
    state.set_attr("last_plan", Value::string(&plan_name));
    state.set_attr(
        "effective_parameters",
        string_map(&sensitive::strip(effective, &secret)),
    );
    state.set_attr("operator_digest", Value::string(packages::digest(&pkg)));
    if !state.get(super::preview::ATTR).is_known() {
        // The plan could not look at the cluster; an apply must leave nothing unknown.
        state.set_attr(super::preview::ATTR, Value::Null);
    }
    state.set_attr("outputs", string_map(&outputs));
    state.set_attr("children", tree.value());
    match run {
        Ok(outcome) => {
            let status = outcome
                .plan_status
                .get("status")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(STATUS_COMPLETE)
                .to_string();
            state.set_attr("status", Value::string(status));
            state.set_attr("objects", objects_value(&cluster, &outcome.inventory).await);
            ApplyResponse {
                new_state: state,
                diagnostics: super::diag::kept_warnings(&outcome.kept),
                ..Default::default()
            }
        }
        Err(e) => {
            // Record what exists so the next plan re-runs the plan (status is not
            // COMPLETE) and destroy finds every object (they also carry the instance label).
            let status = if e.fatal { "FATAL_ERROR" } else { "ERROR" };
            state.set_attr("status", Value::string(status));
            let objects = match &e.inventory {
                Some(known) => known.clone(),
                None if prior.is_null() => Vec::new(),
                None => previous,
            };
            state.set_attr("objects", objects_value(&cluster, &objects).await);
            // Failures can quote rendered text or a rejected value.
            let mut d = engine_diagnostic(
                session,
                &format!("Plan {plan_name} of instance {name} failed"),
                &e,
            );
            d.detail = sensitive::redact(&d.detail, &secret);
            fail(state, d)
        }
    }
}

async fn destroy(
    session: &Session,
    cluster: &Cluster,
    prior: Value,
    seed: Option<&str>,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let namespace = namespace_of(&prior);
    let name = prior.get("name").as_str().unwrap_or_default().to_string();
    let limit = match timeouts::timeout(&prior, "delete", DEFAULT_DELETE) {
        Ok(l) => l,
        Err(d) => {
            return ApplyResponse {
                new_state: prior,
                diagnostics: vec![d],
                ..Default::default()
            };
        }
    };
    let operator = prior
        .get("operator")
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The package is needed only for the `cleanup` plan; without it the objects still go.
    let pkg = find_package(session, &operator, false).await.ok().flatten();
    let params = parameters_of(&prior).unwrap_or_default();
    // KudoOperator tasks of the cleanup plan take their packages from the tree, as the
    // apply's plans do. Without one only folder dependencies run, which is no reason to
    // keep the instance: the cleanup run says which task it could not load.
    let tree = match &pkg {
        Some(p) if p.operator.plans.contains_key("cleanup") => {
            let all = all_parameters_of(&prior).ok().flatten().unwrap_or_default();
            match children::tree(session, &operator, p, &name, &namespace, &all, seed, false).await
            {
                Ok(t) => t,
                Err(d) => {
                    tracing::warn!(summary = %d.summary, detail = %d.detail, "cleanup runs without the dependency tree");
                    None
                }
            }
        }
        _ => None,
    };
    let inventory = objects_of(&prior);
    let deadline = Deadline::new(cancel, limit);
    let mut work = engine::uninstall_instance(
        cluster,
        &namespace,
        &name,
        &inventory,
        pkg.as_ref().map(|package| Cleanup {
            package,
            parameters: &params,
            render_seed: seed,
            dependencies: tree.as_ref().map(|t| &t.packages),
        }),
        crd_deletion_of(&prior),
        &deadline.token,
    )
    .await;
    deadline.explain(cancel, "uninstall", &mut work);
    match work {
        Ok(kept) => ApplyResponse {
            diagnostics: super::diag::kept_warnings(&kept),
            ..Default::default()
        },
        Err(e) => ApplyResponse {
            new_state: prior,
            diagnostics: vec![destroy_diagnostic(
                session,
                &format!("Cannot remove instance {name}"),
                &e,
            )],
            ..Default::default()
        },
    }
}

fn instance_status(instance: &serde_json::Value, plan: &str) -> Option<String> {
    instance
        .pointer(&format!("/status/planStatus/{plan}/status"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

pub async fn read(session: &Session, req: ReadRequest) -> ReadResponse {
    let state = req.current_state;
    let private = req.private;
    let keep = |state: Value, diagnostics: Vec<Diagnostic>| ReadResponse {
        new_state: state,
        private: private.clone(),
        diagnostics,
    };
    let namespace = namespace_of(&state);
    let Some(name) = state.get("name").as_str().map(str::to_string) else {
        return keep(state, Vec::new());
    };
    session.remember_instance(&namespace, &name);
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return keep(state, vec![d]),
    };
    let instance = match cluster.get(&engine::instance_ref(&namespace, &name)).await {
        Ok(Some(i)) => i,
        Ok(None) => return keep(Value::Null, Vec::new()),
        Err(e) => {
            return keep(
                state,
                vec![session.cluster_error("Cannot read the instance", &e)],
            );
        }
    };
    let mut fresh = state.clone();
    let plan = state
        .get("last_plan")
        .as_str()
        .unwrap_or("deploy")
        .to_string();
    if let Some(status) = instance_status(&instance, &plan) {
        fresh.set_attr("status", Value::string(status));
    }
    let entries = object_entries(&state);
    let refs: Vec<ObjectRef> = entries.iter().map(|(r, _)| r.clone()).collect();
    let uids = match cluster_uids(&cluster, &refs).await {
        Ok(u) => u,
        Err(e) => {
            return keep(
                state,
                vec![session.cluster_error("Cannot read a managed object", &e)],
            );
        }
    };
    // A missing object, or one deleted and created again out of band (a new uid), may
    // not hold what the package renders; the next plan applies it again. A uid the
    // state never learned (an apply that could not read it back) is no evidence.
    let drifted = entries
        .iter()
        .zip(&uids)
        .find(|((_, known), now)| match (known, now) {
            (_, None) => true,
            (Some(known), Some(now)) => known != now,
            (None, Some(_)) => false,
        });
    if let Some(((object, _), now)) = drifted
        && fresh.get("status").as_str() == Some(STATUS_COMPLETE)
    {
        match now {
            None => tracing::info!(%object, "managed object is missing; the next plan repairs it"),
            Some(_) => {
                tracing::info!(%object, "managed object was re-created out of band; the next plan applies it again")
            }
        }
        fresh.set_attr("status", Value::string(STATUS_DRIFTED));
    }
    if !entries.is_empty() {
        fresh.set_attr(
            "objects",
            Value::list(
                entries
                    .iter()
                    .zip(&uids)
                    .map(|((r, _), uid)| object_value(r, uid.as_deref())),
            ),
        );
    }
    keep(fresh, Vec::new())
}

pub async fn import(session: &Session, id: &str) -> ImportResponse {
    let fail = |d: Diagnostic| ImportResponse {
        imported: Vec::new(),
        diagnostics: vec![d],
    };
    let Some((namespace, name)) = id
        .split_once('/')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
    else {
        return fail(Diagnostic::error(
            "Invalid import id",
            format!("{id:?} is not `<namespace>/<name>`."),
        ));
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return fail(d),
    };
    let instance = match cluster.get(&engine::instance_ref(namespace, name)).await {
        Ok(Some(i)) => i,
        Ok(None) => {
            return fail(Diagnostic::error(
                "Nothing to import",
                format!("There is no Instance {name} in namespace {namespace}."),
            ));
        }
        Err(e) => return fail(session.cluster_error("Cannot read the instance", &e)),
    };
    let ov_name = instance
        .pointer("/spec/operatorVersion/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let ov_namespace = instance
        .pointer("/spec/operatorVersion/namespace")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(namespace);
    let operator = format!("{ov_namespace}/{ov_name}");
    let params: BTreeMap<String, String> = instance
        .pointer("/spec/parameters")
        .and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    // The plan that ran last is the one with the newest timestamp.
    let last_plan = instance
        .pointer("/status/planStatus")
        .and_then(serde_json::Value::as_object)
        .and_then(|plans| {
            plans
                .iter()
                .filter(|(_, s)| {
                    s.get("status").and_then(serde_json::Value::as_str) != Some("NEVER_RUN")
                })
                .max_by_key(|(_, s)| {
                    s.get("lastUpdatedTimestamp")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .map(|(k, _)| k.clone())
        })
        .unwrap_or_else(|| "deploy".to_string());
    let status = instance_status(&instance, &last_plan).unwrap_or_else(|| "NEVER_RUN".to_string());
    let objects = match cluster
        .list_labelled(namespace, &format!("{}={name}", engine::LABEL_INSTANCE))
        .await
    {
        Ok(list) => {
            let mut found: Vec<(ObjectRef, Option<String>)> = list
                .iter()
                .filter_map(|o| {
                    let r = ObjectRef::from_object(o).ok()?;
                    Some((r, uid_of(o).map(str::to_string)))
                })
                .collect();
            found.sort();
            found
        }
        Err(e) => {
            return fail(session.cluster_error("Cannot list the instance's objects", &e));
        }
    };
    let pkg = engine::load_operator(&cluster, ov_namespace, ov_name)
        .await
        .ok()
        .flatten();
    // The Secret, when there is one, is where the sensitive values went.
    let secret = match engine::read_sensitive(&cluster, namespace, name).await {
        Ok(s) => s,
        Err(e) => {
            return fail(session.engine_error("Cannot read the sensitive parameters", &e));
        }
    };
    let mut all_params = params.clone();
    all_params.extend(secret.iter().map(|(k, v)| (k.clone(), v.clone())));
    let effective = pkg
        .as_ref()
        .and_then(|p| p.effective_params(&all_params).ok());
    let children = match &pkg {
        // An imported instance has no render seed (see `render_seed`).
        Some(p) => children::tree(
            session,
            &operator,
            p,
            name,
            namespace,
            &all_params,
            None,
            true,
        )
        .await
        .ok()
        .flatten()
        .map_or(Value::Null, |t| t.value()),
        None => Value::Null,
    };
    let state = Value::object([
        ("name", Value::string(name)),
        ("namespace", Value::string(namespace)),
        ("operator", Value::string(operator)),
        (
            "parameters",
            if params.is_empty() {
                Value::Null
            } else {
                string_map(&params)
            },
        ),
        (
            sensitive::ATTR,
            if secret.is_empty() {
                Value::Null
            } else {
                string_map(&secret)
            },
        ),
        ("id", Value::string(format!("{namespace}/{name}"))),
        ("status", Value::string(status)),
        (
            "outputs",
            match (&pkg, &effective) {
                (Some(p), Some(e)) => render_outputs(p, name, namespace, e, None)
                    .map_or(Value::Null, |o| string_map(&o)),
                _ => Value::Null,
            },
        ),
        ("last_plan", Value::string(last_plan)),
        (
            "effective_parameters",
            effective
                .map(|e| sensitive::strip(e, &secret))
                .as_ref()
                .map_or(Value::Null, string_map),
        ),
        (super::preview::ATTR, Value::Null),
        (
            "objects",
            Value::list(
                objects
                    .iter()
                    .map(|(r, uid)| object_value(r, uid.as_deref())),
            ),
        ),
        (
            "operator_digest",
            pkg.as_ref()
                .map_or(Value::Null, |p| Value::string(packages::digest(p))),
        ),
        ("timeouts", Value::Null),
        ("children", children),
    ]);
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::INSTANCE.to_string(),
            state,
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}
