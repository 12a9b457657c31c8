//! The one walk over plan -> phase -> step -> task. It decides, for every task of every
//! plan, what a run does (apply these objects, delete those, run this pipe, ensure or
//! remove this dependency instance with these parameters) under one set of rules, and
//! fails with the error the run would hit wherever no cluster is needed to know it.
//! The engine executes these decisions; the plan-time preview, pruning's desired set,
//! the `children` attribute and the `render` command read them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use kudo_package::{Package, PipeSpec, Strategy, TaskSpec};
use serde_json::Value;

use crate::dependency::{self, Dependency, DependencyPackages};
use crate::names::{child_instance_name, child_seed, pipe_artifact_name, pipe_pod_name};
use crate::render::{RenderCache, RenderContext, Rendered};
use crate::switch::{Switched, switch_on};
use crate::webhook::WebhookCall;
use crate::{Location, PlanError};

/// What the walk starts from: one instance of a package with its parameters.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'p> {
    pub package: &'p Package,
    pub instance: &'p str,
    pub namespace: &'p str,
    /// Every value the user set, sensitive ones included (defaults are applied here).
    pub parameters: &'p BTreeMap<String, String>,
    /// The instance's render seed (see `kudo_template::RenderOptions::seed`).
    pub seed: Option<&'p str>,
    /// The resolved child packages of KudoOperator tasks; `None`: only folder
    /// dependencies next to a folder-loaded package can be found.
    pub dependencies: Option<&'p DependencyPackages>,
}

/// The instance's desired state: its effective parameters and every plan of its
/// package walked once with them (each on first use: `render` and a run need one plan,
/// pruning all of them).
#[derive(Debug, Clone)]
pub struct Desired<'p> {
    pub inputs: Inputs<'p>,
    /// Instance values over defaults, checked against params.yaml.
    pub effective: BTreeMap<String, String>,
    /// What templates see as `.Params` (typed values).
    pub template_params: BTreeMap<String, Value>,
    plans: BTreeMap<String, OnceLock<Result<PlanWalk<'p>, PlanError>>>,
    /// Shared by the walks of every plan, so each template file renders once.
    cache: Arc<RenderCache>,
}

/// One plan, walked.
#[derive(Debug, Clone)]
pub struct PlanWalk<'p> {
    pub name: String,
    pub strategy: Strategy,
    /// `.Pipes` of this plan: pipe key -> artifact name.
    pub pipes: BTreeMap<String, String>,
    pub phases: Vec<PhaseWalk<'p>>,
}

#[derive(Debug, Clone)]
pub struct PhaseWalk<'p> {
    pub name: String,
    pub strategy: Strategy,
    pub steps: Vec<StepWalk<'p>>,
}

#[derive(Debug, Clone)]
pub struct StepWalk<'p> {
    pub location: Location,
    pub tasks: Vec<TaskWalk<'p>>,
}

#[derive(Debug, Clone)]
pub struct TaskWalk<'p> {
    pub name: String,
    /// The task kind as the package writes it (`Apply`, `Toggle`, ...).
    pub kind: String,
    pub action: Action<'p>,
}

/// What a task does.
#[derive(Debug, Clone)]
pub enum Action<'p> {
    /// Apply these objects (an Apply task, or a Toggle task switched on).
    Apply(Vec<Rendered>),
    /// Delete these objects (a Delete task, or a Toggle task switched off).
    Delete(Vec<Rendered>),
    /// Run this pod, then store each file as its artifact.
    Pipe { pod: Rendered, files: Vec<PipeFile> },
    /// Ensure (or, when disabled, remove) a dependency instance.
    Child(Box<ChildPlan<'p>>),
    /// Call a webhook and apply the objects it answers (at apply time only: a plan
    /// never calls it, so what it returns is unknown until then).
    Webhook(Box<WebhookCall>),
    /// A Dummy task as configured.
    Dummy {
        want_err: bool,
        fatal: bool,
        done: bool,
    },
}

/// One file a Pipe task stores, and the name of the Secret/ConfigMap it goes to.
#[derive(Debug, Clone, PartialEq)]
pub struct PipeFile {
    pub spec: PipeSpec,
    pub name: String,
}

/// What a plan runs, in order: its phases and their steps, each with its strategy
/// (what a plan shows before the apply, and what KUDO's plan status then reports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOutline {
    pub instance: String,
    pub plan: String,
    pub strategy: Strategy,
    pub phases: Vec<PhaseOutline>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseOutline {
    pub name: String,
    pub strategy: Strategy,
    pub steps: Vec<String>,
}

/// `Plan deploy (serial) runs these phases and steps in order:` and a line per phase,
/// `- phase main (parallel): a, b`.
impl std::fmt::Display for PlanOutline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Plan {} ({}) runs these phases and steps in order:",
            self.plan,
            self.strategy.as_str()
        )?;
        for p in &self.phases {
            let steps = p.steps.join(", ");
            write!(f, "\n- phase {} ({}): {steps}", p.name, p.strategy.as_str())?;
        }
        Ok(())
    }
}

/// A KudoOperator task's dependency instance.
#[derive(Debug, Clone)]
pub struct ChildPlan<'p> {
    /// Whether its `enablingParameter` (if any) is on.
    pub enabled: bool,
    /// Its instance parameters from the task's `parameterFile` (empty when disabled).
    pub parameters: BTreeMap<String, String>,
    /// Its package, name and seed. An error when the package was not handed over and
    /// cannot be read from a folder: the run fails on it at that task; a plan without
    /// the resolved tree cannot know better.
    pub target: Result<ChildTarget<'p>, PlanError>,
}

#[derive(Debug, Clone)]
pub struct ChildTarget<'p> {
    pub package: Cow<'p, Package>,
    pub instance: String,
    pub seed: Option<String>,
}

/// Everything the instance wants to exist whatever plan runs: what pruning keeps.
/// What Webhook tasks answer cannot be known here; pruning keeps their objects by the
/// latest answer instead (see `webhook_tasks` and `docs/webhook-tasks.md`).
#[derive(Debug, Clone, Default)]
pub struct Wanted<'a> {
    /// Objects any plan applies.
    pub objects: Vec<&'a Rendered>,
    /// (kind, name) of every pipe artifact of any plan.
    pub pipe_artifacts: Vec<(String, String)>,
    /// Enabled dependency instances of any plan.
    pub children: Vec<String>,
}

impl<'p> Desired<'p> {
    /// Checks the parameters. Only invalid parameters fail here; a plan that cannot be
    /// walked fails when it is asked for ([`Desired::plan`]).
    pub fn new(inputs: Inputs<'p>) -> Result<Desired<'p>, PlanError> {
        let pkg = inputs.package;
        let effective = pkg.effective_params(inputs.parameters).map_err(|errs| {
            let list: Vec<String> = errs
                .iter()
                .map(|e| format!("{}: {}", e.parameter, e.message))
                .collect();
            PlanError::new(format!("invalid parameters: {}", list.join("; ")))
        })?;
        let template_params = pkg
            .template_params(&effective)
            .map_err(|e| PlanError::new(format!("parameter {}: {}", e.parameter, e.message)))?;
        Ok(Desired {
            inputs,
            effective,
            template_params,
            plans: pkg
                .operator
                .plans
                .keys()
                .map(|name| (name.clone(), OnceLock::new()))
                .collect(),
            cache: Arc::default(),
        })
    }

    /// The same instance with the resolved dependency packages handed in, sharing this
    /// one's renders: dependencies decide only which package a KudoOperator task runs,
    /// never what a template renders to, so the `children` of a plan reuse the preview's
    /// renders instead of rendering the package again.
    pub fn with_dependencies<'q>(&self, dependencies: &'q DependencyPackages) -> Desired<'q>
    where
        'p: 'q,
    {
        Desired {
            inputs: Inputs {
                dependencies: Some(dependencies),
                ..self.inputs
            },
            effective: self.effective.clone(),
            template_params: self.template_params.clone(),
            plans: self
                .plans
                .keys()
                .map(|name| (name.clone(), OnceLock::new()))
                .collect(),
            cache: Arc::clone(&self.cache),
        }
    }

    /// How many template files this instance's walks have rendered (each once per set
    /// of values; see [`RenderCache`]).
    pub fn rendered_files(&self) -> usize {
        self.cache.len()
    }

    /// The walk of plan `name`, or the error a run of it would fail with.
    pub fn plan(&self, name: &str) -> Result<&PlanWalk<'p>, PlanError> {
        match self.plans.get(name) {
            Some(cell) => cell
                .get_or_init(|| self.walk(name, Some(&self.cache)))
                .as_ref()
                .map_err(Clone::clone),
            None => {
                let known: Vec<&String> = self.inputs.package.operator.plans.keys().collect();
                Err(PlanError::new(format!(
                    "operator {} has no plan {name:?} (it has {known:?})",
                    self.inputs.package.operator.name
                ))
                .with_plan(name))
            }
        }
    }

    /// What every plan wants to exist; `None` when some plan cannot be walked or some
    /// dependency cannot be found (pruning then removes nothing: better to leak than to
    /// delete something still wanted).
    pub fn wanted(&self) -> Option<Wanted<'_>> {
        let mut wanted = Wanted::default();
        for name in self.plans.keys() {
            let walk = self.plan(name).ok()?;
            for task in walk.tasks() {
                match &task.action {
                    Action::Apply(objects) => wanted.objects.extend(objects),
                    Action::Pipe { files, .. } => wanted
                        .pipe_artifacts
                        .extend(files.iter().map(|f| (f.spec.kind.clone(), f.name.clone()))),
                    Action::Child(child) if child.enabled => {
                        wanted
                            .children
                            .push(child.target.as_ref().ok()?.instance.clone());
                    }
                    _ => {}
                }
            }
        }
        Some(wanted)
    }

    /// Names of the package's Webhook tasks that some plan runs: an object one of them
    /// answered stays until that task answers without it (or no plan runs it any more).
    pub fn webhook_tasks(&self) -> std::collections::BTreeSet<&str> {
        self.plans
            .keys()
            .filter_map(|name| self.plan(name).ok())
            .flat_map(|w| w.tasks())
            .filter(|t| matches!(t.action, Action::Webhook(_)))
            .map(|t| t.name.as_str())
            .collect()
    }

    fn render_context<'c>(
        &'c self,
        pipes: BTreeMap<String, String>,
        cache: Option<&'c RenderCache>,
    ) -> RenderContext<'c> {
        RenderContext {
            cache,
            package: self.inputs.package,
            instance: self.inputs.instance,
            namespace: self.inputs.namespace,
            params: &self.template_params,
            pipes,
            seed: self.inputs.seed,
        }
    }

    /// THE traversal of a plan's phases, steps and tasks.
    fn walk(
        &self,
        plan_name: &str,
        cache: Option<&RenderCache>,
    ) -> Result<PlanWalk<'p>, PlanError> {
        let pkg = self.inputs.package;
        let Some(plan) = pkg.operator.plans.get(plan_name) else {
            return Err(PlanError::new(format!("no plan {plan_name:?}")).with_plan(plan_name));
        };
        // Pipe names first: any template of the plan may read any `.Pipes` key.
        let mut steps: Vec<(usize, Location, Vec<&kudo_package::Task>)> = Vec::new();
        for (index, phase) in plan.phases.iter().enumerate() {
            for step in &phase.steps {
                let location = Location {
                    plan: plan_name.to_string(),
                    phase: phase.name.clone(),
                    step: step.name.clone(),
                };
                let tasks = step
                    .tasks
                    .iter()
                    .map(|name| {
                        pkg.task(name).ok_or_else(|| {
                            PlanError::new(format!(
                                "step names task {name:?}, which the operator does not define"
                            ))
                            .at(&location)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                steps.push((index, location, tasks));
            }
        }
        let mut pipes = BTreeMap::new();
        for (_, location, tasks) in &steps {
            for task in tasks {
                if let TaskSpec::Pipe { pipe, .. } = &task.spec {
                    for p in pipe {
                        let name =
                            pipe_artifact_name(self.inputs.instance, location, &task.name, &p.key);
                        pipes.insert(p.key.clone(), name);
                    }
                }
            }
        }
        let ctx = self.render_context(pipes.clone(), cache);
        let mut phases: Vec<PhaseWalk<'p>> = plan
            .phases
            .iter()
            .map(|phase| PhaseWalk {
                name: phase.name.clone(),
                strategy: phase.strategy,
                steps: Vec::new(),
            })
            .collect();
        for (index, location, tasks) in steps {
            let mut walked = Vec::new();
            for task in tasks {
                let action = self
                    .decide_task(&ctx, &location, task)
                    .map_err(|e| e.at(&location).with_task(&task.name))?;
                walked.push(TaskWalk {
                    name: task.name.clone(),
                    kind: task.kind.clone(),
                    action,
                });
            }
            if let Some(phase) = phases.get_mut(index) {
                phase.steps.push(StepWalk {
                    location,
                    tasks: walked,
                });
            }
        }
        Ok(PlanWalk {
            name: plan_name.to_string(),
            strategy: plan.strategy,
            pipes,
            phases,
        })
    }

    fn decide_task(
        &self,
        ctx: &RenderContext<'_>,
        loc: &Location,
        task: &'p kudo_package::Task,
    ) -> Result<Action<'p>, PlanError> {
        Ok(match &task.spec {
            TaskSpec::Apply { resources, patches } => {
                Action::Apply(ctx.render_applied(loc, resources, patches)?)
            }
            TaskSpec::Delete { resources } => Action::Delete(ctx.render_deleted(loc, resources)?),
            TaskSpec::Toggle {
                parameter,
                resources,
            } => {
                let on = switch_on(&self.effective, parameter, Switched::Toggle)?;
                // Checked as applied also when switched off: the same objects are
                // applied once the parameter turns on.
                let objects = ctx.render_applied(loc, resources, &[])?;
                if on {
                    Action::Apply(objects)
                } else {
                    Action::Delete(objects)
                }
            }
            TaskSpec::Dummy {
                want_err,
                fatal,
                done,
            } => Action::Dummy {
                want_err: *want_err,
                fatal: *fatal,
                done: *done,
            },
            TaskSpec::Pipe { pod, pipe } => {
                let mut rendered = ctx.render_task(loc, std::slice::from_ref(pod), &[])?;
                if rendered.len() != 1 {
                    return Err(PlanError::new(format!(
                        "pipe template {pod} renders {} objects; it must render exactly one Pod",
                        rendered.len()
                    )));
                }
                let mut pod = rendered.remove(0);
                let name = pipe_pod_name(self.inputs.instance, loc, &task.name);
                pod.object = crate::pipe::prepare_pod(pod.object, &name)
                    .map_err(|e| e.with_template(pod.template.clone()))?;
                let files = pipe
                    .iter()
                    .map(|spec| PipeFile {
                        spec: spec.clone(),
                        name: pipe_artifact_name(self.inputs.instance, loc, &task.name, &spec.key),
                    })
                    .collect();
                Action::Pipe { pod, files }
            }
            TaskSpec::Webhook(spec) => Action::Webhook(Box::new(crate::webhook::call(
                ctx,
                loc,
                &task.name,
                spec,
                &self.effective,
            )?)),
            TaskSpec::KudoOperator { .. } => {
                let Some(dep) = Dependency::of(task) else {
                    return Err(PlanError::new("not a KudoOperator task"));
                };
                Action::Child(Box::new(self.child(ctx, &dep)?))
            }
        })
    }

    /// A KudoOperator task's child: enabled by the one switch rule, named by the one
    /// naming rule, seeded from this instance's seed, parameters from its file.
    fn child(
        &self,
        ctx: &RenderContext<'_>,
        dep: &Dependency<'_>,
    ) -> Result<ChildPlan<'p>, PlanError> {
        let enabled = match dep.enabling_parameter.filter(|p| !p.is_empty()) {
            Some(param) => switch_on(&self.effective, param, Switched::Dependency(dep.package))?,
            None => true,
        };
        let target =
            dependency::load(self.inputs.package, dep, self.inputs.dependencies).map(|package| {
                let instance = child_instance_name(
                    self.inputs.instance,
                    dep.instance_name,
                    &package.operator.name,
                );
                let seed = child_seed(self.inputs.seed, &instance);
                ChildTarget {
                    package,
                    instance,
                    seed,
                }
            });
        let parameters = match (enabled, dep.parameter_file) {
            (true, Some(file)) => child_parameters(ctx, file)?,
            _ => BTreeMap::new(),
        };
        Ok(ChildPlan {
            enabled,
            parameters,
            target,
        })
    }
}

/// The rendered parameter file of a KudoOperator task (KEP-29: it sees the parent's
/// variables, but no plan, phase or step).
fn child_parameters(
    ctx: &RenderContext<'_>,
    file: &str,
) -> Result<BTreeMap<String, String>, PlanError> {
    let quiet = Location::default();
    let docs = ctx
        .render_task(&quiet, &[file.to_string()], &[])?
        .into_iter()
        .map(|r| r.object)
        .collect();
    dependency::parameters_from(file, docs)
}

impl<'p> PlanWalk<'p> {
    /// The Webhook tasks of the plan in order, with their calls.
    pub fn webhooks(&self) -> impl Iterator<Item = (&StepWalk<'p>, &str, &WebhookCall)> {
        self.steps().flat_map(|s| {
            s.tasks.iter().filter_map(move |t| match &t.action {
                Action::Webhook(call) => Some((s, t.name.as_str(), call.as_ref())),
                _ => None,
            })
        })
    }

    /// The plan's phases and steps, in order, for `instance`.
    pub fn outline(&self, instance: &str) -> PlanOutline {
        PlanOutline {
            instance: instance.to_string(),
            plan: self.name.clone(),
            strategy: self.strategy,
            phases: self
                .phases
                .iter()
                .map(|p| PhaseOutline {
                    name: p.name.clone(),
                    strategy: p.strategy,
                    steps: p.steps.iter().map(|s| s.location.step.clone()).collect(),
                })
                .collect(),
        }
    }

    /// Every task of the plan in order.
    pub fn tasks(&self) -> impl Iterator<Item = &TaskWalk<'p>> {
        self.phases
            .iter()
            .flat_map(|p| &p.steps)
            .flat_map(|s| &s.tasks)
    }

    /// Every (step, task) of the plan in order.
    pub fn steps(&self) -> impl Iterator<Item = &StepWalk<'p>> {
        self.phases.iter().flat_map(|p| &p.steps)
    }

    /// The first task that does something else in `other` (the same plan walked with
    /// other inputs): other objects, another pod or call, a dependency instance with
    /// other values or seed. Disabled dependency tasks and Dummy tasks never differ.
    pub fn first_differing_task(&self, other: &PlanWalk<'_>) -> Option<&str> {
        self.tasks().zip(other.tasks()).find_map(|(x, y)| {
            let same = match (&x.action, &y.action) {
                (Action::Apply(p), Action::Apply(q)) | (Action::Delete(p), Action::Delete(q)) => {
                    p == q
                }
                (Action::Pipe { pod: p, files: f }, Action::Pipe { pod: q, files: g }) => {
                    p == q && f == g
                }
                (Action::Child(p), Action::Child(q)) => {
                    p.enabled == q.enabled
                        && (!p.enabled
                            || (p.parameters == q.parameters
                                && match (&p.target, &q.target) {
                                    (Ok(s), Ok(t)) => s.seed == t.seed,
                                    _ => true,
                                }))
                }
                (Action::Webhook(p), Action::Webhook(q)) => p == q,
                (Action::Dummy { .. }, Action::Dummy { .. }) => true,
                _ => false,
            };
            (!same).then_some(x.name.as_str())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every fixture package (the real ones beside the repository and our own), walked
    /// with the defaults: the cached renders of [`Desired::new`] must give exactly what
    /// rendering every task afresh gives.
    /// The day2 package walked with two seeds: its `rotate` plan renders a random key,
    /// so its task differs; `report` renders none.
    #[test]
    fn a_task_rendering_random_values_differs_between_seeds() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let pkg = Package::load_dir(&root.join("tests/fixtures/operators/day2")).expect("day2");
        let none = BTreeMap::new();
        let walk = |seed| {
            Desired::new(Inputs {
                package: &pkg,
                instance: "app",
                namespace: "ns",
                parameters: &none,
                seed: Some(seed),
                dependencies: None,
            })
            .expect("valid parameters")
        };
        let (a, b) = (walk("one"), walk("two"));
        let plans = |name| (a.plan(name).expect("walks"), b.plan(name).expect("walks"));
        let (x, y) = plans("rotate");
        assert_eq!(x.first_differing_task(y), Some("key"));
        let (x, y) = plans("report");
        assert_eq!(x.first_differing_task(y), None);
        let (x, y) = plans("hang");
        assert_eq!(x.first_differing_task(y), None);
    }

    #[test]
    fn an_outline_lists_the_phases_and_steps_in_order() {
        let phase = |name: &str, strategy, steps: &[&str]| PhaseOutline {
            name: name.into(),
            strategy,
            steps: steps.iter().map(|s| s.to_string()).collect(),
        };
        let outline = PlanOutline {
            instance: "app".into(),
            plan: "deploy".into(),
            strategy: Strategy::Serial,
            phases: vec![
                phase("main", Strategy::Parallel, &["a", "b"]),
                phase("last", Strategy::Serial, &["c"]),
            ],
        };
        assert_eq!(
            outline.to_string(),
            "Plan deploy (serial) runs these phases and steps in order:\n- phase main (parallel): a, b\n- phase last (serial): c"
        );
    }

    #[test]
    fn cached_renders_equal_fresh_renders() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut checked = 0;
        for dir in ["../shared/fixtures/operators", "tests/fixtures/operators"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(pkg) = Package::load_dir(&entry.path()) else {
                    continue;
                };
                let none = BTreeMap::new();
                let inputs = Inputs {
                    package: &pkg,
                    instance: "inst",
                    namespace: "ns",
                    parameters: &none,
                    seed: Some("seed"),
                    dependencies: None,
                };
                let Ok(desired) = Desired::new(inputs) else {
                    continue;
                };
                for name in pkg.operator.plans.keys() {
                    let fresh = desired.walk(name, None);
                    let cached = desired.plan(name);
                    assert_eq!(
                        format!("{cached:?}"),
                        format!("{:?}", fresh.as_ref()),
                        "{} plan {name}",
                        entry.path().display()
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= 5, "only {checked} fixture packages found");
    }

    /// `children` walks the parent with the resolved packages handed in; that walk must
    /// decide exactly what the preview's walk decides and render nothing again.
    #[test]
    fn a_walk_with_dependencies_reuses_the_renders() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/operators/flink-demo");
        let Ok(pkg) = Package::load_dir(&dir) else {
            eprintln!("SKIPPED: {} is absent", dir.display());
            return;
        };
        let none = BTreeMap::new();
        let desired = Desired::new(Inputs {
            package: &pkg,
            instance: "demo",
            namespace: "ns",
            parameters: &none,
            seed: Some("seed"),
            dependencies: None,
        })
        .expect("defaults are valid");
        let preview = format!("{:?}", desired.plan("deploy"));
        let rendered = desired.rendered_files();
        assert!(rendered > 0, "flink-demo's deploy plan renders templates");
        let packages = DependencyPackages::new();
        let children = desired.with_dependencies(&packages);
        assert_eq!(format!("{:?}", children.plan("deploy")), preview);
        assert_eq!(
            children.rendered_files(),
            rendered,
            "nothing rendered again"
        );
        assert_eq!(desired.rendered_files(), rendered);
    }
}
