//! `outputs` and `children` as a plan knows them, rendered with the instance's seed (or
//! with two probe seeds before it has one).

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_package::Package;
use kudo_plan::Desired;

use crate::provider::Session;
use crate::provider::children;
use crate::provider::sensitive::{self};

use super::values::*;

/// Renders the package's `outputs:` templates with the instance's variables. Plan,
/// phase and step names are empty: outputs are computed while planning, and must come
/// out the same when the apply recomputes them.
pub(super) fn render_outputs(
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
                        crate::provider::diag::AGAIN
                    ),
                )
                .with_attribute(AttributePath::attribute("operator"))
            })
        })
        .collect()
}

/// The render seed as a plan knows it.
pub(super) enum PlanSeed {
    /// The instance's own (`None`: it has none, see `render_seed`).
    Known(Option<String>),
    /// The instance is created by this apply, which draws its seed then: Terraform plans
    /// a create again during the apply without this plan's private state, so a seed
    /// drawn while planning could not reach the apply.
    AtApply,
}

/// Two seeds no instance has: what renders alike with both does not depend on the seed.
pub(super) const PROBE_SEEDS: [&str; 2] = ["kudo-plan-probe-1", "kudo-plan-probe-2"];

impl PlanSeed {
    /// The seed to render with where one render must do (the preview's dry-run).
    pub(super) fn known(&self) -> Option<&str> {
        match self {
            PlanSeed::Known(s) => s.as_deref(),
            PlanSeed::AtApply => None,
        }
    }
}

/// `a` where `b` agrees, unknown where they differ: of a value rendered with two probe
/// seeds, the part that does not depend on the seed, which the plan can promise.
pub(super) fn known_part(a: Value, b: &Value) -> Value {
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
pub(super) fn planned_outputs(
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
/// `walked` is the plan's own walk of the instance (see [`children::tree`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn planned_children(
    session: &Session,
    operator: &Option<String>,
    pkg: &Option<Package>,
    name: &Option<String>,
    namespace: &str,
    params: &Option<BTreeMap<String, String>>,
    secret: &BTreeMap<String, String>,
    seed: &PlanSeed,
    walked: Option<&Desired<'_>>,
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
                walked,
            )
            .await
        }
    };
    match seed {
        PlanSeed::Known(s) => Ok(tree(s.as_deref())
            .await?
            .map_or(Value::Unknown, |t| children::children_value(&t, secret))),
        PlanSeed::AtApply => match (
            tree(Some(PROBE_SEEDS[0])).await?,
            tree(Some(PROBE_SEEDS[1])).await?,
        ) {
            (Some(a), Some(b)) => Ok(known_part(
                children::children_value(&a, secret),
                &children::children_value(&b, secret),
            )),
            _ => Ok(Value::Unknown),
        },
    }
}
