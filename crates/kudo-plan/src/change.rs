//! What a change of one instance does, decided without a cluster: its effective
//! parameters, `outputs:`, its dependency instances, whether an immutable parameter
//! forces a new instance, downgrades, and which plan runs. The engine's planning call
//! (`kudo_engine::engine::plan_change`) adds what only the cluster tells; every view of
//! a pending apply is made from the two.

use std::collections::BTreeMap;

use kudo_package::{Package, ParamError};
use kudo_resolve::Resolution;

use crate::downgrade::{self, Downgrade, Version};
use crate::tree::{Child, Tree, TreeError, build_tree, has_dependency_tasks};
use crate::{
    DEFAULT_PLAN, DecideError, Desired, ImmutableChange, Inputs, LastRun, PlanError, Prior,
    WantedChange,
};

/// The render seed as a plan knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seed<'a> {
    /// The instance's own (`None`: it has none, and renders with the public seed).
    Known(Option<&'a str>),
    /// The instance is created by this apply, which draws its seed then: what depends
    /// on the seed is not known before.
    AtApply,
}

impl<'a> Seed<'a> {
    /// The seed to render with where one render must do (a dry-run).
    pub fn known(&self) -> Option<&'a str> {
        match self {
            Seed::Known(s) => *s,
            Seed::AtApply => None,
        }
    }
}

/// Two seeds no instance has: what renders alike with both does not depend on the seed.
pub const PROBE_SEEDS: [&str; 2] = ["kudo-plan-probe-1", "kudo-plan-probe-2"];

/// A value a plan shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    Value(String),
    /// It carries the value of a sensitive parameter: never shown.
    Sensitive,
    /// It depends on the render seed the apply draws: known after the apply.
    DependsOnSeed,
}

/// A dependency instance as a plan shows it (see [`Child`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildView {
    pub name: String,
    pub operator: String,
    pub operator_version: String,
    pub enabled: bool,
    pub parameters: BTreeMap<String, Shown>,
    pub parent: String,
}

impl ChildView {
    pub fn of(child: &Child, sensitive: &BTreeMap<String, String>) -> ChildView {
        ChildView {
            name: child.name.clone(),
            operator: child.operator.clone(),
            operator_version: child.operator_version.clone(),
            enabled: child.enabled,
            parameters: child
                .parameters
                .iter()
                .map(|(k, v)| {
                    let shown = match reveals(v, sensitive) {
                        true => Shown::Sensitive,
                        false => Shown::Value(v.clone()),
                    };
                    (k.clone(), shown)
                })
                .collect(),
            parent: child.parent.clone(),
        }
    }

    /// The child as versions compare it.
    fn child(&self) -> Child {
        Child {
            name: self.name.clone(),
            operator: self.operator.clone(),
            operator_version: self.operator_version.clone(),
            enabled: self.enabled,
            parameters: BTreeMap::new(),
            parent: self.parent.clone(),
        }
    }
}

/// What is shown instead of a sensitive value.
pub const REDACTED: &str = "(sensitive value)";

/// `text` with every non-empty sensitive value replaced by [`REDACTED`], for messages
/// built from values (a parameter check quotes the value it rejects).
pub fn redact(text: &str, sensitive: &BTreeMap<String, String>) -> String {
    let mut values: Vec<&String> = sensitive.values().filter(|v| !v.is_empty()).collect();
    // Longest first, so a value containing another is replaced whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values
        .into_iter()
        .fold(text.to_string(), |t, v| t.replace(v.as_str(), REDACTED))
}

/// Whether `text` carries a non-empty sensitive value.
pub fn reveals(text: &str, sensitive: &BTreeMap<String, String>) -> bool {
    sensitive
        .values()
        .any(|s| !s.is_empty() && text.contains(s.as_str()))
}

/// Whether showing `text`, part of an object of `kind`, would reveal a sensitive value:
/// anything of a Secret does (its values are often encoded sensitive parameters), and
/// so does any text that carries one ([`reveals`]).
pub fn object_reveals(kind: &str, text: &str, sensitive: &BTreeMap<String, String>) -> bool {
    kind == "Secret" || reveals(text, sensitive)
}

/// How an instance's last run ended, as the state records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    Complete,
    /// Complete, but objects changed outside Terraform since (a refresh found them).
    Drifted,
    /// Any other status (`ERROR`, `FATAL_ERROR`, `IN_PROGRESS`, ...), or none.
    Unfinished(String),
}

impl RunStatus {
    pub const COMPLETE: &'static str = "COMPLETE";
    pub const DRIFTED: &'static str = "DRIFTED";

    pub fn parse(status: Option<&str>) -> RunStatus {
        match status {
            Some(Self::COMPLETE) => RunStatus::Complete,
            Some(Self::DRIFTED) => RunStatus::Drifted,
            Some(other) => RunStatus::Unfinished(other.to_string()),
            None => RunStatus::Unfinished("unknown".to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Complete => Self::COMPLETE,
            RunStatus::Drifted => Self::DRIFTED,
            RunStatus::Unfinished(s) => s,
        }
    }

    fn last_run(&self) -> LastRun {
        match self {
            RunStatus::Complete => LastRun::Complete,
            RunStatus::Drifted => LastRun::Drifted,
            RunStatus::Unfinished(s) => LastRun::Unfinished(s.clone()),
        }
    }
}

/// What the state recorded of the instance after its last apply.
#[derive(Debug, Clone, Default)]
pub struct PriorInstance<'a> {
    /// Its OperatorVersion's name.
    pub operator_version: Option<&'a str>,
    /// The package it ran, when it can still be read (for the version order).
    pub package: Option<&'a Package>,
    /// Every value it ran with, sensitive ones included; `None` when unreadable.
    pub parameters: Option<&'a BTreeMap<String, String>>,
    pub last_plan: Option<&'a str>,
    pub status: Option<RunStatus>,
    /// [`kudo_package::crd::content_digest`] of the package it ran.
    pub digest: Option<&'a str>,
    pub plan_triggers: Option<&'a BTreeMap<String, String>>,
    /// Its dependency instances; `None` when the state does not say.
    pub children: Option<&'a [ChildView]>,
}

/// One change of an instance, as the configuration asks for it. `None` values are not
/// known yet (another resource of the configuration decides them).
#[derive(Debug, Clone)]
pub struct ChangeRequest<'a> {
    pub name: Option<&'a str>,
    pub namespace: &'a str,
    /// The OperatorVersion it will run, by name (known before its package may be).
    pub operator_version: Option<&'a str>,
    pub package: Option<&'a Package>,
    /// Every value the user set, sensitive ones included.
    pub parameters: Option<&'a BTreeMap<String, String>>,
    /// The sensitive ones among them: never shown.
    pub sensitive: &'a BTreeMap<String, String>,
    pub plan_triggers: Option<&'a BTreeMap<String, String>>,
    pub seed: Seed<'a>,
    /// The dependency tree resolved for the package; `None` when not known yet.
    pub resolution: Option<&'a Resolution>,
    /// `None`: a new instance.
    pub prior: Option<PriorInstance<'a>>,
    /// Another attribute forces a new instance (a new name): planned as a create.
    pub replacing: bool,
    /// `allow_downgrade`: a downgrade is a warning, not a refusal.
    pub allow_downgrade: bool,
}

/// Which plan the apply runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanChoice {
    /// Nothing changed and the last run completed.
    Settled,
    Run(String),
    /// It depends on values not known yet.
    Unknown,
}

impl PlanChoice {
    pub fn plan(&self) -> Option<&str> {
        match self {
            PlanChoice::Run(p) => Some(p),
            _ => None,
        }
    }
}

/// The change, decided.
#[derive(Debug, Default)]
pub struct Change<'a> {
    /// Values over defaults; `None` when the package or the values are not known.
    pub effective: Option<BTreeMap<String, String>>,
    /// `outputs:` rendered; `None` when not known.
    pub outputs: Option<BTreeMap<String, Shown>>,
    /// The dependency instances; `None` when not known.
    pub children: Option<Vec<ChildView>>,
    /// The dependency tree the apply runs (with the instance's own seed; the public
    /// seed before a new instance has one); `None` when not known.
    pub tree: Option<Tree>,
    /// Immutable parameters that change: the instance is created again.
    pub replacement: Vec<ImmutableChange>,
    /// Downgrades `allow_downgrade` lets through.
    pub downgrades: Vec<Downgrade>,
    pub run: Option<PlanChoice>,
    /// [`kudo_package::crd::content_digest`] of the package.
    pub digest: Option<String>,
    /// The instance's desired state (the walk every view uses), when known.
    pub desired: Option<Desired<'a>>,
}

impl Change<'_> {
    pub fn plan(&self) -> Option<&str> {
        self.run.as_ref().and_then(PlanChoice::plan)
    }

    /// Whether a new instance is planned (created, or created again).
    pub fn replaces(&self) -> bool {
        !self.replacement.is_empty()
    }
}

/// Why the change cannot be made; each names what the user changes.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refusal {
    #[error("{}", .0.iter().map(|(_, text)| text.as_str()).collect::<Vec<_>>().join("\n"))]
    UnknownPlans(Vec<(String, String)>),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Parameters(Vec<ParamError>),
    #[error("output {key}: {error}")]
    Output {
        key: String,
        error: kudo_template::RenderError,
    },
    #[error("outputs {0:?} would contain a sensitive value")]
    OutputReveals(Vec<String>),
    #[error("{0}")]
    Walk(PlanError),
    #[error("{0}")]
    Tree(TreeError),
    #[error("downgrade")]
    Downgrade(Downgrade),
    #[error("{0}")]
    Decide(DecideError),
}

/// Decides the change `req` asks for. Fails with what the apply would fail with (for
/// what needs no cluster), so a plan never promises what the apply refuses.
pub fn decide_change<'a>(req: &ChangeRequest<'a>) -> Result<Change<'a>, Refusal> {
    let mut change = Change::default();
    if let (Some(pkg), Some(triggers)) = (req.package, req.plan_triggers) {
        let unknown: Vec<(String, String)> = triggers
            .keys()
            .filter(|plan| !pkg.operator.plans.contains_key(*plan))
            .map(|plan| (plan.clone(), crate::unknown_plan(pkg, plan)))
            .collect();
        if !unknown.is_empty() {
            return Err(Refusal::UnknownPlans(unknown));
        }
    }
    change.digest = req.package.map(kudo_package::crd::content_digest);
    if let (Some(pkg), Some(values)) = (req.package, req.parameters) {
        change.effective = Some(pkg.effective_params(values).map_err(Refusal::Parameters)?);
    }
    if let (Some(pkg), Some(effective), Some(name)) = (req.package, &change.effective, req.name) {
        change.outputs = Some(planned_outputs(pkg, name, req, effective)?);
    }
    // Walked as the apply walks it, so that what fails without a cluster (templates,
    // a switch that is not a boolean) fails the plan with the apply's words.
    if let (Some(pkg), Some(values), Some(name)) = (req.package, req.parameters, req.name) {
        let desired = Desired::new(Inputs {
            package: pkg,
            instance: name,
            namespace: req.namespace,
            parameters: values,
            seed: req.seed.known(),
            dependencies: None,
        })
        .map_err(Refusal::Walk)?;
        change.desired = Some(desired);
    }
    planned_children(req, &mut change)?;
    if let (Some(pkg), Some(new), Some(prior), false) =
        (req.package, req.parameters, &req.prior, req.replacing)
        && let Some(old) = prior.parameters
    {
        change.replacement = crate::immutable_changes(pkg, old, new);
    }
    let replacing = req.replacing || change.replaces();
    if let (Some(prior), Some(pkg), false) = (&req.prior, req.package, replacing) {
        for d in downgrades(prior, req, pkg, change.children.as_deref()) {
            match req.allow_downgrade {
                true => change.downgrades.push(d),
                false => return Err(Refusal::Downgrade(d)),
            }
        }
    }
    let Some(triggers) = req.plan_triggers else {
        // Which plan runs depends on a value not known yet.
        return Ok(change);
    };
    change.run = Some(choose_plan(req, &change, triggers, replacing)?);
    if let (Some(desired), Some(plan)) = (&change.desired, change.plan())
        && let Err(e) = desired.plan(plan)
    {
        return Err(Refusal::Walk(e));
    }
    Ok(change)
}

/// The annotation an object template carries when the object changes data in a way
/// putting the objects back does not undo (a migration Job): a rollback of a failed
/// change names the objects of it that have it (`"true"`) and were written.
pub const ANNOTATION_MIGRATES_DATA: &str = "rollback.kudo.dev/migrates-data";

/// Where a rollback puts an instance back: the version, values and plan triggers of
/// its last completed apply.
#[derive(Debug, Clone, Copy)]
pub struct RollbackTo<'a> {
    /// The OperatorVersion's name.
    pub operator_version: &'a str,
    pub package: &'a Package,
    /// Every value, sensitive ones included.
    pub parameters: &'a BTreeMap<String, String>,
    pub plan_triggers: &'a BTreeMap<String, String>,
}

/// The plan that puts an instance back on `to` after the change `failed` asked for
/// (running `failed_plan`) failed: the change from `failed` to `to`, decided by the
/// same rule as every change with downgrades allowed, so a rollback runs what a
/// configuration reverted to `to` with `allow_downgrade = true` would run. Decided at
/// plan time, so the apply only executes it.
pub fn rollback_plan(
    failed: &ChangeRequest<'_>,
    failed_plan: &str,
    to: &RollbackTo<'_>,
) -> Result<String, Refusal> {
    let digest = failed.package.map(kudo_package::crd::content_digest);
    let back = ChangeRequest {
        name: failed.name,
        namespace: failed.namespace,
        operator_version: Some(to.operator_version),
        package: Some(to.package),
        parameters: Some(to.parameters),
        sensitive: failed.sensitive,
        plan_triggers: Some(to.plan_triggers),
        seed: failed.seed,
        resolution: None,
        prior: Some(PriorInstance {
            operator_version: failed.operator_version,
            package: failed.package,
            parameters: failed.parameters,
            last_plan: Some(failed_plan),
            // What a failed run leaves; a finished one is never rolled back.
            status: Some(RunStatus::Unfinished("ERROR".into())),
            digest: digest.as_deref(),
            plan_triggers: failed.plan_triggers,
            children: None,
        }),
        replacing: false,
        allow_downgrade: true,
    };
    Ok(decide_change(&back)?
        .plan()
        .unwrap_or(DEFAULT_PLAN)
        .to_string())
}

/// The plan the change runs, by [`crate::decide`]'s rule.
fn choose_plan(
    req: &ChangeRequest<'_>,
    change: &Change<'_>,
    triggers: &BTreeMap<String, String>,
    replacing: bool,
) -> Result<PlanChoice, Refusal> {
    let exists = req.prior.is_some() && !replacing;
    let empty = BTreeMap::new();
    match (req.package, req.parameters) {
        (Some(pkg), Some(values)) => {
            let prior = req.prior.clone().unwrap_or_default();
            let prior_model = Prior {
                operator_version: prior.operator_version.unwrap_or_default(),
                parameters: prior.parameters.unwrap_or(&empty),
                last_plan: prior.last_plan,
                last_run: prior
                    .status
                    .unwrap_or(RunStatus::Unfinished("unknown".into()))
                    .last_run(),
                digest: prior.digest,
                plan_triggers: prior.plan_triggers.unwrap_or(&empty),
            };
            let wanted = WantedChange {
                package: pkg,
                parameters: values,
                digest: change.digest.as_deref(),
                plan_triggers: triggers,
                children_changed: children_changed(prior.children, change.children.as_deref()),
            };
            let decision =
                crate::decide(exists.then_some(&prior_model), &wanted).map_err(Refusal::Decide)?;
            Ok(match decision.plan() {
                Some(plan) => PlanChoice::Run(plan.to_string()),
                None => PlanChoice::Settled,
            })
        }
        // Without the package or the values only a create is certain, and an
        // instance nothing about has changed stays as it is.
        _ if !exists => Ok(PlanChoice::Run(DEFAULT_PLAN.to_string())),
        _ => {
            let prior = req.prior.clone().unwrap_or_default();
            let unchanged = req.parameters.is_some()
                && req.parameters == prior.parameters
                && req.operator_version == prior.operator_version
                && Some(triggers) == prior.plan_triggers
                && prior.status == Some(RunStatus::Complete);
            Ok(match unchanged {
                true => PlanChoice::Settled,
                false => PlanChoice::Unknown,
            })
        }
    }
}

/// Whether the dependency tree differs from the one the last run used: another
/// dependency version (a changed override or repository) leaves the instance's own
/// package and values as they were, so nothing else would run a plan.
pub fn children_changed(before: Option<&[ChildView]>, after: Option<&[ChildView]>) -> bool {
    match (before, after) {
        (Some(before), Some(after)) => before != after,
        _ => false,
    }
}

fn downgrades(
    prior: &PriorInstance<'_>,
    req: &ChangeRequest<'_>,
    pkg: &Package,
    children: Option<&[ChildView]>,
) -> Vec<Downgrade> {
    let mut out = Vec::new();
    if let (Some(old_ov), Some(new_ov)) = (prior.operator_version, req.operator_version)
        && old_ov != new_ov
    {
        let name = &pkg.operator.name;
        let old = match prior.package {
            Some(old) if &old.operator.name == name => Some(Version::of(old)),
            // Another operator altogether: no order between the two.
            Some(_) => None,
            None => downgrade::version_of_name(name, old_ov),
        };
        if let Some(old) = old
            && let Some(d) = downgrade::check_operator(name, &old, &Version::of(pkg))
        {
            out.push(d);
        }
    }
    if let (Some(before), Some(after)) = (prior.children, children) {
        let before: Vec<Child> = before.iter().map(ChildView::child).collect();
        let after: Vec<Child> = after.iter().map(ChildView::child).collect();
        out.extend(downgrade::check_children(&before, &after));
    }
    out
}

/// Renders the package's `outputs:` templates with the instance's variables. Plan,
/// phase and step names are empty: outputs are computed while planning, and must come
/// out the same when the apply recomputes them.
pub fn render_outputs(
    pkg: &Package,
    name: &str,
    namespace: &str,
    effective: &BTreeMap<String, String>,
    seed: Option<&str>,
) -> Result<BTreeMap<String, String>, Refusal> {
    let params = pkg
        .template_params(effective)
        .map_err(|e| Refusal::Parameters(vec![e]))?;
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
            .map_err(|error| Refusal::Output {
                key: key.clone(),
                error,
            })
        })
        .collect()
}

/// Outputs must not publish a sensitive value (they are shown in plans).
pub fn check_outputs(
    outputs: &BTreeMap<String, String>,
    sensitive: &BTreeMap<String, String>,
) -> Result<(), Refusal> {
    let leaking: Vec<String> = outputs
        .iter()
        .filter(|(_, rendered)| reveals(rendered, sensitive))
        .map(|(k, _)| k.clone())
        .collect();
    match leaking.is_empty() {
        true => Ok(()),
        false => Err(Refusal::OutputReveals(leaking)),
    }
}

/// `outputs` while planning, rendered as the apply will render them; with two probe
/// seeds before the instance has its own.
fn planned_outputs(
    pkg: &Package,
    name: &str,
    req: &ChangeRequest<'_>,
    effective: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, Shown>, Refusal> {
    let render = |seed: Option<&str>| {
        let o = render_outputs(pkg, name, req.namespace, effective, seed)?;
        check_outputs(&o, req.sensitive)?;
        Ok::<_, Refusal>(o)
    };
    match req.seed {
        Seed::Known(s) => Ok(render(s)?
            .into_iter()
            .map(|(k, v)| (k, Shown::Value(v)))
            .collect()),
        Seed::AtApply => {
            let a = render(Some(PROBE_SEEDS[0]))?;
            let b = render(Some(PROBE_SEEDS[1]))?;
            Ok(a.into_iter()
                .map(|(k, v)| {
                    let shown = match b.get(&k) == Some(&v) {
                        true => Shown::Value(v),
                        false => Shown::DependsOnSeed,
                    };
                    (k, shown)
                })
                .collect())
        }
    }
}

/// The dependency tree of the instance from `req.resolution`, its root replaced by the
/// instance's own package (the resolver names its tree after the operator).
pub fn tree_of(
    resolution: &Resolution,
    pkg: &Package,
    name: &str,
    namespace: &str,
    parameters: &BTreeMap<String, String>,
    seed: Option<&str>,
    walked: Option<&Desired<'_>>,
) -> Result<Tree, TreeError> {
    if !has_dependency_tasks(pkg) {
        return Ok(Tree::default());
    }
    if let Some(root) = resolution.nodes.first()
        && root.operator_version_name != pkg.operator_version_name()
    {
        // The tree belongs to another version of the operator (a stale plan directory).
        return Err(TreeError::Stale {
            recorded: root.operator_version_name.clone(),
            running: pkg.operator_version_name(),
        });
    }
    let mut resolution = resolution.clone();
    if let Some(root) = resolution.nodes.first() {
        resolution
            .packages
            .insert(root.package.clone(), pkg.clone());
    }
    build_tree(&resolution, name, namespace, parameters, seed, walked)
}

/// `children` and the tree while planning; unknown until the package, values, name
/// and resolution are. Before the instance has a seed, parameter files are rendered
/// with two probe seeds and what differs is not known yet.
fn planned_children(req: &ChangeRequest<'_>, change: &mut Change<'_>) -> Result<(), Refusal> {
    let (Some(pkg), Some(name), Some(values)) = (req.package, req.name, req.parameters) else {
        return Ok(());
    };
    let Some(resolution) = req.resolution.or_else(|| {
        // Without KudoOperator tasks there is nothing to resolve.
        (!has_dependency_tasks(pkg)).then_some(&EMPTY)
    }) else {
        return Ok(());
    };
    let walked = change.desired.as_ref();
    let tree = |seed: Option<&str>| {
        tree_of(resolution, pkg, name, req.namespace, values, seed, walked).map_err(Refusal::Tree)
    };
    let views = |t: &Tree| -> Vec<ChildView> {
        t.children
            .iter()
            .map(|c| ChildView::of(c, req.sensitive))
            .collect()
    };
    match req.seed {
        Seed::Known(seed) => {
            let t = tree(seed)?;
            change.children = Some(views(&t));
            change.tree = Some(t);
        }
        Seed::AtApply => {
            let (a, b) = (tree(Some(PROBE_SEEDS[0]))?, tree(Some(PROBE_SEEDS[1]))?);
            change.children = known_part(views(&a), views(&b));
            // The dry-run renders with the public seed (as the preview of a new
            // instance's own objects does).
            change.tree = Some(tree(None)?);
        }
    }
    Ok(())
}

static EMPTY: std::sync::LazyLock<Resolution> = std::sync::LazyLock::new(Resolution::default);

/// Of two renders of the children with different seeds, what does not depend on the
/// seed; `None` when even their shape does.
fn known_part(a: Vec<ChildView>, b: Vec<ChildView>) -> Option<Vec<ChildView>> {
    if a.len() != b.len() {
        return None;
    }
    a.into_iter()
        .zip(b)
        .map(|(mut x, y)| {
            let same_shape = x.name == y.name
                && x.operator == y.operator
                && x.operator_version == y.operator_version
                && x.enabled == y.enabled
                && x.parent == y.parent
                && x.parameters.keys().eq(y.parameters.keys());
            if !same_shape {
                return None;
            }
            for (k, v) in x.parameters.iter_mut() {
                if y.parameters.get(k) != Some(v) {
                    *v = Shown::DependsOnSeed;
                }
            }
            Some(x)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> Package {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/operators");
        Package::load_dir(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A change of `pkg` with `params`, from `prior` (None: a create).
    fn request<'a>(
        pkg: &'a Package,
        params: &'a BTreeMap<String, String>,
        triggers: &'a BTreeMap<String, String>,
        prior: Option<PriorInstance<'a>>,
    ) -> ChangeRequest<'a> {
        static NONE: std::sync::LazyLock<BTreeMap<String, String>> =
            std::sync::LazyLock::new(BTreeMap::new);
        ChangeRequest {
            name: Some("app"),
            namespace: "ns",
            operator_version: Some("lifecycle-0.1.0"),
            package: Some(pkg),
            parameters: Some(params),
            sensitive: &NONE,
            plan_triggers: Some(triggers),
            seed: Seed::Known(None),
            resolution: None,
            prior,
            replacing: false,
            allow_downgrade: false,
        }
    }

    #[test]
    fn a_create_runs_deploy_and_a_settled_instance_nothing() {
        let pkg = fixture("lifecycle-v1");
        let (params, triggers) = (values(&[("GREETING", "hi")]), BTreeMap::new());
        let created = decide_change(&request(&pkg, &params, &triggers, None)).expect("plans");
        assert_eq!(created.run, Some(PlanChoice::Run(DEFAULT_PLAN.into())));
        let effective = created.effective.expect("values known");
        assert_eq!(effective["GREETING"], "hi");
        assert_eq!(effective["DATABASE"], "main", "defaults filled in");
        let digest = created.digest.clone();
        let prior = PriorInstance {
            operator_version: Some("lifecycle-0.1.0"),
            parameters: Some(&params),
            last_plan: Some(DEFAULT_PLAN),
            status: Some(RunStatus::Complete),
            digest: digest.as_deref(),
            plan_triggers: Some(&triggers),
            ..Default::default()
        };
        let settled =
            decide_change(&request(&pkg, &params, &triggers, Some(prior.clone()))).expect("plans");
        assert_eq!(settled.run, Some(PlanChoice::Settled));
        // Drift alone runs deploy again.
        let drifted = PriorInstance {
            status: Some(RunStatus::Drifted),
            ..prior
        };
        let again =
            decide_change(&request(&pkg, &params, &triggers, Some(drifted))).expect("plans");
        assert_eq!(again.run, Some(PlanChoice::Run(DEFAULT_PLAN.into())));
    }

    #[test]
    fn an_immutable_change_is_a_replacement_and_a_downgrade_a_refusal() {
        let pkg = fixture("lifecycle-v1");
        let old = values(&[("DATABASE", "orders")]);
        let new = values(&[("DATABASE", "billing")]);
        let triggers = BTreeMap::new();
        let prior = PriorInstance {
            operator_version: Some("lifecycle-0.1.0"),
            parameters: Some(&old),
            status: Some(RunStatus::Complete),
            plan_triggers: Some(&triggers),
            ..Default::default()
        };
        let change =
            decide_change(&request(&pkg, &new, &triggers, Some(prior.clone()))).expect("plans");
        assert_eq!(change.replacement.len(), 1, "{:?}", change.replacement);
        assert!(change.replaces());
        assert_eq!(change.run, Some(PlanChoice::Run(DEFAULT_PLAN.into())));
        // Running 0.1.0 after 0.2.0: refused unless allowed.
        let newer = fixture("lifecycle-v2");
        let from_newer = PriorInstance {
            operator_version: Some("lifecycle-0.2.0"),
            package: Some(&newer),
            parameters: Some(&old),
            ..prior
        };
        let req = request(&pkg, &old, &triggers, Some(from_newer));
        match decide_change(&req) {
            Err(Refusal::Downgrade(Downgrade::Operator { from, to, .. })) => {
                assert_eq!(
                    (from.operator.as_str(), to.operator.as_str()),
                    ("0.2.0", "0.1.0")
                );
            }
            other => panic!("expected a downgrade refusal, got {other:?}"),
        }
        let allowed = ChangeRequest {
            allow_downgrade: true,
            ..req
        };
        let change = decide_change(&allowed).expect("allowed");
        assert_eq!(change.downgrades.len(), 1);
    }

    #[test]
    fn a_rollback_runs_what_a_reverted_configuration_would_run() {
        let (old, new) = (fixture("lifecycle-v1"), fixture("lifecycle-v2"));
        let params = values(&[("DATABASE", "orders")]);
        let triggers = BTreeMap::new();
        let prior = PriorInstance {
            operator_version: Some("lifecycle-0.1.0"),
            package: Some(&old),
            parameters: Some(&params),
            status: Some(RunStatus::Complete),
            plan_triggers: Some(&triggers),
            ..Default::default()
        };
        let upgrade = ChangeRequest {
            operator_version: Some("lifecycle-0.2.0"),
            ..request(&new, &params, &triggers, Some(prior))
        };
        let to = RollbackTo {
            operator_version: "lifecycle-0.1.0",
            package: &old,
            parameters: &params,
            plan_triggers: &triggers,
        };
        // 0.1.0 has no `upgrade` plan: going back to it deploys it, downgrade or not.
        assert_eq!(
            rollback_plan(&upgrade, "upgrade", &to).expect("decided"),
            DEFAULT_PLAN
        );
        // Values the old package does not declare cannot be put back: refused, with
        // the words a reverted configuration would get.
        let unknown = values(&[("NO_SUCH_PARAMETER", "x")]);
        let bad = RollbackTo {
            parameters: &unknown,
            ..to
        };
        assert!(matches!(
            rollback_plan(&upgrade, "upgrade", &bad),
            Err(Refusal::Parameters(_))
        ));
    }

    #[test]
    fn what_is_not_known_stays_unknown() {
        let pkg = fixture("lifecycle-v1");
        let params = values(&[]);
        let triggers = BTreeMap::new();
        let req = ChangeRequest {
            plan_triggers: None,
            ..request(&pkg, &params, &triggers, None)
        };
        let change = decide_change(&req).expect("plans");
        assert_eq!(change.run, None, "which plan runs needs plan_triggers");
        assert!(change.effective.is_some() && change.outputs.is_some());
        let unknown_values = ChangeRequest {
            parameters: None,
            ..request(&pkg, &params, &triggers, None)
        };
        let change = decide_change(&unknown_values).expect("plans");
        assert_eq!(
            change.run,
            Some(PlanChoice::Run(DEFAULT_PLAN.into())),
            "a create"
        );
        assert!(change.effective.is_none() && change.desired.is_none());
    }

    #[test]
    fn a_seed_dependent_output_is_unknown_before_the_instance_has_a_seed() {
        let pkg = fixture("random-secret");
        let params = values(&[]);
        let triggers = BTreeMap::new();
        let req = ChangeRequest {
            seed: Seed::AtApply,
            ..request(&pkg, &params, &triggers, None)
        };
        let change = decide_change(&req).expect("plans");
        let outputs = change.outputs.expect("outputs");
        assert!(
            outputs.values().any(|v| *v == Shown::DependsOnSeed),
            "{outputs:?}"
        );
        let known = ChangeRequest {
            seed: Seed::Known(Some("s")),
            ..req
        };
        let outputs = decide_change(&known)
            .expect("plans")
            .outputs
            .expect("outputs");
        assert!(
            outputs.values().all(|v| matches!(v, Shown::Value(_))),
            "{outputs:?}"
        );
    }

    #[test]
    fn redaction_hides_sensitive_values() {
        let secret = values(&[("P", "hunter2"), ("E", "")]);
        assert_eq!(redact("a hunter2 b", &secret), format!("a {REDACTED} b"));
        assert!(reveals("x:hunter2@h", &secret) && !reveals("h:80", &secret));
        assert!(object_reveals("Secret", "h:80", &secret));
        assert!(!object_reveals("ConfigMap", "h:80", &secret));
        assert!(object_reveals("ConfigMap", "hunter2", &secret));
        assert!(check_outputs(&values(&[("URL", "x:hunter2@h")]), &secret).is_err());
        assert!(check_outputs(&values(&[("URL", "h:80")]), &secret).is_ok());
    }
}
