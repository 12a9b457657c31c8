//! The plan RPC: Terraform's proposed state into the engine's planning call
//! ([`engine::plan_change`], for the instance and its whole dependency tree), and its
//! answer back into the planned state and diagnostics. The decisions are the engine's.

use std::collections::BTreeMap;

use tfplugin::{Attr, AttributePath, Diagnostic, IntoValue, PlanRequest, PlanResponse, Value};

use kudo_engine::engine::{self, PlanChangeRequest, Planned};
use kudo_plan::{ChangeRequest, PlanChoice, PriorInstance, RunStatus, Seed};

use crate::provider::manifests;
use crate::provider::packages::parse_operator_id;
use crate::provider::private_state::PrivateState;
use crate::provider::sensitive;
use crate::provider::{Session, decode, namespace_of, schema};

use super::write_only::{Restore, WriteOnly};

use super::lookup::{plan_copy, recorded_resolution};
use super::model::{InstanceModel, ManagedObject};
use super::{refusal, rollback, views};

pub(super) async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
    // Private state carries the render seed, records and drift; a plan hands it on
    // unchanged. A create (a replacement's included: Terraform then passes the old
    // object's private state) hands on none, so the new object gets a seed of its own.
    let private = match req.prior_state.is_null() {
        true => None,
        false => Some(PrivateState::parse(&req.prior_private)),
    };
    let (prior, proposed, config) = match (
        decode::<InstanceModel>(&req.prior_state),
        decode::<InstanceModel>(&req.proposed_new_state),
        decode::<InstanceModel>(&req.config),
    ) {
        (Ok(prior), Ok(proposed), Ok(config)) => (prior, proposed, config),
        (Err(d), _, _) | (_, Err(d), _) | (_, _, Err(d)) => return PlanResponse::refused(d),
    };
    let Some(proposed) = proposed else {
        // A destroy: nothing to plan, and the seed stays until the apply.
        return PlanResponse {
            planned_private: req.prior_private,
            ..Default::default()
        };
    };
    // Write-only values join the sensitive ones in the engine (see `write_only`).
    let write_only = WriteOnly::of(prior.as_ref(), &proposed, config.as_ref());
    let (mut resp, for_apply, restore) = plan_inner(
        session,
        prior,
        proposed,
        private.as_ref(),
        write_only.as_ref(),
    )
    .await;
    // What the apply right after this plan may skip (see `PrivateState::tree`).
    let mut planned_private = private.unwrap_or_default();
    planned_private.tree = match for_apply.tree {
        Some(tree) => tree,
        None => planned_private.tree.spent(),
    };
    planned_private.rollback = for_apply.rollback;
    planned_private.settled = for_apply.settled;
    // A summary planned anew (it names run `runs + 1`) is this apply's run.
    let summary = |state: &tfplugin::Value| state.get("summary").clone();
    let new_summary = summary(&resp.planned_state);
    if new_summary.is_known() && !new_summary.is_null() && new_summary != summary(&req.prior_state)
    {
        planned_private.runs += 1;
    }
    resp.planned_private = planned_private.to_bytes();
    resp.planned_state = restore.state(resp.planned_state);
    restore.diagnostics(&mut resp.diagnostics);
    restore.replace_paths(&mut resp.requires_replace);
    if !req.prior_state.is_null() {
        crate::provider::diag::with_destroy_advice(&mut resp.diagnostics);
    }
    resp
}

/// Everything the planning call reads, owned (the call borrows it).
struct Inputs {
    namespace: String,
    name: Option<String>,
    operator: Option<String>,
    prior_operator: Option<String>,
    /// `kudo_operator`'s plan-time copies (the engine reads the cluster's when there
    /// are none).
    pkg: Option<kudo_package::Package>,
    old_pkg: Option<kudo_package::Package>,
    resolution: Option<kudo_resolve::Resolution>,
    params: Option<BTreeMap<String, String>>,
    secret: BTreeMap<String, String>,
    triggers: Option<BTreeMap<String, String>>,
    prior_params: Option<BTreeMap<String, String>>,
    prior_triggers: BTreeMap<String, String>,
    prior_children: Option<Vec<kudo_plan::ChildView>>,
    objects: Vec<kudo_engine::cluster::ObjectRef>,
    private: PrivateState,
}

impl Inputs {
    fn read(
        prior: Option<&InstanceModel>,
        proposed: &InstanceModel,
        private: Option<&PrivateState>,
    ) -> Result<Inputs, Vec<Diagnostic>> {
        let operator = proposed.operator.known().cloned();
        let pkg = operator.as_deref().and_then(plan_copy);
        // The package the instance ran, for the version order of a downgrade.
        let prior_operator = prior.and_then(|p| p.operator.known()).cloned();
        let old_pkg = match &prior_operator {
            Some(old) if Some(old) != operator.as_ref() => plan_copy(old),
            _ => None,
        };
        let resolution = match (&pkg, &operator) {
            (Some(p), Some(id)) => recorded_resolution(id, p),
            _ => None,
        };
        Ok(Inputs {
            namespace: namespace_of(&proposed.namespace),
            name: proposed.name.known().cloned(),
            operator,
            prior_operator,
            pkg,
            old_pkg,
            resolution,
            params: proposed.all_parameters()?,
            secret: proposed.sensitive().unwrap_or_default(),
            triggers: proposed.plan_triggers(),
            prior_params: prior.and_then(|p| p.all_parameters().ok().flatten()),
            prior_triggers: prior.and_then(|p| p.plan_triggers()).unwrap_or_default(),
            prior_children: prior.and_then(|p| views::prior_children(&p.children)),
            objects: prior.map(InstanceModel::object_refs).unwrap_or_default(),
            private: private.cloned().unwrap_or_default(),
        })
    }

    fn ov_name(id: Option<&String>) -> Option<&str> {
        id.and_then(|id| parse_operator_id(id)).map(|(_, ov)| ov)
    }

    fn ov_namespace(id: Option<&String>) -> Option<&str> {
        id.and_then(|id| parse_operator_id(id)).map(|(ns, _)| ns)
    }

    fn request<'a>(
        &'a self,
        prior: Option<&'a InstanceModel>,
        proposed: &'a InstanceModel,
        replacing: bool,
    ) -> ChangeRequest<'a> {
        ChangeRequest {
            name: self.name.as_deref(),
            namespace: &self.namespace,
            operator_version: Inputs::ov_name(self.operator.as_ref()),
            package: self.pkg.as_ref(),
            parameters: self.params.as_ref(),
            sensitive: &self.secret,
            plan_triggers: self.triggers.as_ref(),
            seed: match prior {
                Some(_) => Seed::Known(self.private.render_seed.as_deref()),
                None => Seed::AtApply,
            },
            resolution: self.resolution.as_ref(),
            prior: prior.map(|p| PriorInstance {
                operator_version: Inputs::ov_name(p.operator.known()),
                package: self.old_pkg.as_ref(),
                parameters: self.prior_params.as_ref(),
                last_plan: p.last_plan.as_deref(),
                status: Some(RunStatus::parse(p.status.as_deref())),
                digest: p.operator_digest.as_deref(),
                plan_triggers: Some(&self.prior_triggers),
                children: self.prior_children.as_deref(),
            }),
            replacing,
            allow_downgrade: proposed.allows_downgrade(),
        }
    }
}

async fn plan_inner(
    session: &Session,
    prior: Option<InstanceModel>,
    proposed: InstanceModel,
    private: Option<&PrivateState>,
    write_only: Option<&WriteOnly>,
) -> (PlanResponse, ForApply, Restore) {
    let fail = |diagnostics| {
        let refused = PlanResponse::refused(diagnostics);
        (refused, ForApply::default(), Restore::none())
    };
    // Known connection settings must lead to a cluster before anything is planned.
    let cluster = match session.planning_cluster().await {
        Ok(c) => c,
        Err(d) => return fail(vec![d]),
    };
    let schema = schema::instance();
    let prior_state = prior.clone().into_value();
    // A namespace known only at apply comes from another resource, which creates it
    // first; what goes into it is known then too.
    if proposed.namespace.is_unknown() {
        // The engine's join is not reached: its refusal of a name set twice is made here.
        let twice = write_only.map_or_else(Vec::new, |w| w.set_twice_in(&proposed));
        if !twice.is_empty() {
            return fail(twice);
        }
        let planned = schema.mark_computed_unknown(&proposed.into_value());
        let resp = PlanResponse {
            requires_replace: schema.requires_replace(&prior_state, &planned),
            planned_state: planned,
            ..Default::default()
        };
        return (resp, ForApply::default(), Restore::none());
    }
    let inputs = match Inputs::read(prior.as_ref(), &proposed, private) {
        Ok(i) => i,
        Err(d) => return fail(d),
    };
    let mut planned = proposed.clone();
    planned.namespace = inputs.namespace.as_str().into();
    planned.id = inputs.name.as_ref().map_or(Attr::Unknown, |n| {
        format!("{}/{n}", inputs.namespace).into()
    });
    if let Some(p) = &prior
        && let Some(prior_name) = p.name.as_deref()
    {
        session.remember_instance(&namespace_of(&p.namespace), prior_name);
    }
    let replacing = !schema
        .requires_replace(&prior_state, &planned.clone().into_value())
        .is_empty();
    let show_manifests = manifests::wanted(&proposed.show_manifests, session.config.show_manifests);
    let request = inputs.request(prior.as_ref(), &proposed, replacing);
    let plan_request = PlanChangeRequest {
        change: &request,
        objects: &inputs.objects,
        record: &inputs.private.tree,
        fresh: prior.is_none(),
        crd_safety: proposed.crd_safety(session.config.crd_upgrade_safety),
        // Every object's content is copied only for `manifests` to show.
        manifests: show_manifests == Some(true),
        // A new resource must not find its Instance there already (someone else's),
        // unless this run's state holds it (the create half of a replacement).
        must_not_exist: prior.is_none()
            && inputs
                .name
                .as_ref()
                .is_some_and(|n| !session.knows_instance(&inputs.namespace, n)),
        create_namespace: proposed.create_namespace.known() == Some(&true),
        operator_namespace: Inputs::ov_namespace(inputs.operator.as_ref()),
        prior_operator_namespace: Inputs::ov_namespace(inputs.prior_operator.as_ref()),
        write_only: write_only.map(WriteOnly::request),
    };
    // The plan borrows the packages the engine reads, so it is encoded inside the call.
    let encode = |change: &ChangeRequest<'_>, decided: Result<Planned<'_>, _>| {
        let values = WriteOnlyValues::of(write_only, change, &inputs);
        let restore = match write_only {
            Some(w) => w.for_plan(values.used.clone(), values.prior.keys().cloned().collect()),
            None => Restore::none(),
        };
        let planned_change = match decided {
            Ok(p) => p,
            Err(r) => {
                let diagnostics = refused(session, prior.as_ref(), &inputs, change, r);
                return (
                    PlanResponse::refused(diagnostics),
                    ForApply::default(),
                    restore,
                );
            }
        };
        let none = InstanceModel::default();
        let answer = Answer {
            prior: prior.as_ref().unwrap_or(&none),
            proposed: &proposed,
            inputs: &inputs,
            package: change.package,
            secret: change.sensitive,
            write_only: &values,
            show_manifests,
            replacing,
            fresh: prior.is_none(),
        };
        let mut resp = answer.encode(session, planned, &planned_change, &prior_state);
        let mut for_apply = ForApply {
            tree: Some(planned_change.record(&inputs.private.tree)),
            rollback: None,
            settled: planned_change.change.run == Some(PlanChoice::Settled),
        };
        let rolls_back = proposed.rolls_back(session.config.rollback_on_failure);
        if let (Some(prior), Some(plan), true) = (&prior, planned_change.change.plan(), rolls_back)
            && !replacing
            && !planned_change.change.replaces()
            && !resp.diagnostics.iter().any(Diagnostic::is_error)
        {
            match rollback_target(&inputs, prior, change, plan) {
                Ok(target) => for_apply.rollback = Some(target),
                Err(warning) => resp.diagnostics.push(warning),
            }
            let crds = planned_change.tree.as_ref().and_then(rollback::crd_warning);
            resp.diagnostics.extend(crds);
        }
        (resp, for_apply, restore)
    };
    engine::plan_change(cluster.as_ref(), &plan_request, encode).await
}

/// The write-only values a plan used, as the engine joined them into `change`.
#[derive(Default)]
struct WriteOnlyValues {
    /// The change's.
    used: BTreeMap<String, String>,
    /// The prior instance's, compared with.
    prior: BTreeMap<String, String>,
}

impl WriteOnlyValues {
    fn of(write_only: Option<&WriteOnly>, change: &ChangeRequest<'_>, inputs: &Inputs) -> Self {
        let Some(write_only) = write_only else {
            return WriteOnlyValues::default();
        };
        let before = inputs.prior_params.as_ref();
        let prior = change
            .prior
            .as_ref()
            .and_then(|p| p.parameters)
            .into_iter()
            .flatten()
            .filter(|(k, _)| before.is_none_or(|b| !b.contains_key(*k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        WriteOnlyValues {
            used: write_only.used(change.sensitive),
            prior,
        }
    }

    /// Both, for redacting text that could quote either.
    fn all(&self) -> BTreeMap<String, String> {
        let mut all = self.prior.clone();
        all.extend(self.used.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }
}

/// The diagnostics of a refused plan: a downgrade back to the version the instance last
/// completed is advice to roll back; the rest are worded with the package `change` ran.
fn refused(
    session: &Session,
    prior: Option<&InstanceModel>,
    inputs: &Inputs,
    change: &ChangeRequest<'_>,
    r: engine::PlanRefusal,
) -> Vec<Diagnostic> {
    if let engine::PlanRefusal::Change(kudo_plan::Refusal::Downgrade(d)) = &r
        && let Some(prior) = prior
        && let Some(back) = refusal::back_after_failure(
            d,
            prior,
            inputs.private.completed.as_deref(),
            inputs.operator.as_deref(),
        )
    {
        return vec![back];
    }
    let params = change.parameters.cloned().unwrap_or_default();
    refusal::diagnostics(session, change.package, &params, change.sensitive, r)
}

/// What a plan hands to the apply right after it, besides the planned state.
#[derive(Default)]
struct ForApply {
    /// The engine's record of the tree as this plan hands it over (see
    /// `PrivateState::tree`); `None` without a plan: the prior one, nothing handed over.
    tree: Option<engine::TreeRecord>,
    /// Where a failure puts the instance back (`rollback_on_failure`).
    rollback: Option<rollback::RollbackTarget>,
    /// See `PrivateState::settled`.
    settled: bool,
}

/// The rollback target of an update planned to run `plan` (see [`rollback::target`]),
/// with the package and dependency tree the instance last ran.
fn rollback_target(
    inputs: &Inputs,
    prior: &InstanceModel,
    change: &ChangeRequest<'_>,
    plan: &str,
) -> Result<rollback::RollbackTarget, Diagnostic> {
    let old = prior.operator.known();
    let same = old.is_some() && old == inputs.operator.as_ref();
    let (package, tree) = match (same, old) {
        (true, _) => (change.package, change.resolution.cloned()),
        (false, Some(old)) => {
            let package = change.prior.as_ref().and_then(|p| p.package);
            (package, package.and_then(|p| recorded_resolution(old, p)))
        }
        (false, None) => (None, None),
    };
    let before = rollback::Before {
        prior,
        // With the write-only values it ran with (joined by the engine).
        parameters: change.prior.as_ref().and_then(|p| p.parameters),
        package,
        resolution: tree.as_ref(),
    };
    rollback::target(change, plan, &before)
}

/// What the planning call answered, read into the planned state.
struct Answer<'a> {
    prior: &'a InstanceModel,
    proposed: &'a InstanceModel,
    inputs: &'a Inputs,
    /// The package the change runs, when known (a plan-time copy or the cluster's).
    package: Option<&'a kudo_package::Package>,
    /// Every sensitive value the change runs with, write-only ones included: what no
    /// text of the answer may quote.
    secret: &'a BTreeMap<String, String>,
    write_only: &'a WriteOnlyValues,
    show_manifests: Option<bool>,
    replacing: bool,
    /// A create: a new resource or the create half of a replacement. (The two cannot
    /// be told apart the same way when Terraform plans the create again during the
    /// apply, in another provider process, and both plans must agree.)
    fresh: bool,
}

impl Answer<'_> {
    fn encode(
        &self,
        session: &Session,
        mut planned: InstanceModel,
        answer: &Planned<'_>,
        prior_state: &Value,
    ) -> PlanResponse {
        let schema = schema::instance();
        let change = &answer.change;
        let mut diagnostics = Vec::new();
        planned.outputs = views::outputs(change.outputs.as_ref());
        planned.children = views::children(change.children.as_deref());
        // An immutable parameter's change replaces the instance; the rest of this plan
        // is then that of a new instance.
        let mut also_replace = Vec::new();
        if !self.replacing
            && let Some(r) = refusal::replacement(
                &change.replacement,
                self.prior,
                self.proposed,
                &self.write_only.all(),
            )
        {
            also_replace = r.paths;
            diagnostics.push(r.warning);
        }
        if let Ok(settings) =
            crate::provider::health::parse(&self.proposed.health, &self.proposed.health_rule)
        {
            let provider = &session.config.health;
            diagnostics.extend(crate::provider::health::unused_rules(&settings, provider));
        }
        diagnostics.extend(change.downgrades.iter().map(refusal::allowed));
        let Some(run) = &change.run else {
            // Which plan runs depends on a value Terraform does not know yet.
            let planned = schema.mark_computed_unknown(&planned.into_value());
            let mut requires_replace = schema.requires_replace(prior_state, &planned);
            requires_replace.extend(also_replace);
            return PlanResponse {
                planned_state: planned,
                requires_replace,
                diagnostics,
                ..Default::default()
            };
        };
        let plan_to_run: Option<Attr<String>> = match run {
            PlanChoice::Settled => None,
            PlanChoice::Run(p) => Some(Attr::Known(p.clone())),
            PlanChoice::Unknown => Some(Attr::Unknown),
        };
        if self.package.is_none() && self.inputs.operator.is_some() {
            diagnostics.push(Diagnostic::warning(
                "Parameters not checked",
                "The operator package is neither planned in this configuration nor installed yet, so parameters will be checked when the apply runs.",
            ));
        }
        diagnostics.extend(answer.notes.iter().map(crate::provider::preview::warning));
        planned.preview = match &answer.tree {
            Some(tree) => crate::provider::preview::of_tree(tree),
            None => Value::Unknown,
        };
        planned.plan_steps = match &answer.tree {
            Some(tree) => crate::provider::plan_status::plan_steps(&tree.outlines),
            None => Value::Unknown,
        };
        let name = self.inputs.name.as_deref().unwrap_or_default();
        planned.summary = match &answer.tree {
            Some(tree) => crate::provider::summary::of_tree(
                name,
                self.inputs.private.runs + 1,
                tree,
                &self.recreated(),
                &self.prior.drifted_fields,
            ),
            None => Value::Unknown,
        };
        planned.manifests = self.manifests(answer, plan_to_run.is_none());
        // A create's every parameter is the package's business, not the reviewer's:
        // known at apply, so that the plan shows one line rather than every default
        // (`parameters` shows what the configuration sets).
        let effective = match self.fresh {
            true => None,
            false => change
                .effective
                .clone()
                .map(|e| sensitive::strip(e, self.secret)),
        };
        let plan_status = match &plan_to_run {
            Some(Attr::Known(plan)) => self.completed_status(plan),
            _ => Value::Unknown,
        };
        let objects = match (&answer.tree, self.replacing) {
            (Some(tree), false) => self.objects_after(tree),
            _ => Attr::Unknown,
        };
        finish(
            &schema,
            prior_state,
            self.prior,
            planned,
            Finished {
                plan: plan_to_run,
                effective,
                digest: change.digest.clone(),
                plan_status,
                objects,
                also_replace,
                diagnostics,
            },
        )
    }

    /// The prior state's objects a refresh found deleted (no uid), which the apply
    /// creates again.
    fn recreated(&self) -> Vec<kudo_engine::cluster::ObjectRef> {
        self.prior
            .object_entries()
            .into_iter()
            .filter(|(_, uid)| uid.is_none())
            .map(|(r, _)| r)
            .collect()
    }

    /// `plan_status` as a successful run of `plan` leaves it (the engine's
    /// [`kudo_plan::PlanStatus::completed`]): only `last_updated`, the run's time, is
    /// unknown. A run that fails returns an error, and Terraform then takes whatever
    /// the apply recorded.
    fn completed_status(&self, plan: &str) -> Value {
        let Some(package_plan) = self.package.and_then(|p| p.operator.plans.get(plan)) else {
            return Value::Unknown;
        };
        let status = kudo_plan::PlanStatus::completed(plan, package_plan);
        let mut value = crate::provider::plan_status::value(Some(&status), self.secret);
        value.set_attr("last_updated", Value::Unknown);
        value
    }

    /// `objects` after a successful run: the inventory the engine predicts
    /// (`InstancePlan::after` of the engine's tree plan), each object keeping the uid the state has
    /// unless the run creates it (new, deleted since the last apply, or deleted and
    /// applied again by the run's own tasks). Unknown when the engine cannot name the
    /// inventory.
    fn objects_after(&self, tree: &engine::TreePlan) -> Attr<BTreeMap<String, ManagedObject>> {
        let (Some(after), Some(changes)) = (&tree.instance.after, &tree.instance.changes) else {
            return Attr::Unknown;
        };
        let prior = self.prior.objects.known();
        let created: std::collections::HashSet<String> =
            changes.create.iter().map(ManagedObject::key).collect();
        Attr::Known(
            after
                .iter()
                .map(|remaining| {
                    let r = &remaining.object;
                    let key = ManagedObject::key(r);
                    let uid = match remaining.recreated || created.contains(&key) {
                        true => None,
                        false => prior
                            .and_then(|p| p.get(&key))
                            .and_then(|o| o.uid.known().cloned()),
                    };
                    let mut object = ManagedObject::new(r, uid.as_deref());
                    if uid.is_none() {
                        object.uid = Attr::Unknown;
                    }
                    (key, object)
                })
                .collect(),
        )
    }

    /// `manifests` as planned: the objects managed after the apply, when asked for.
    fn manifests(&self, answer: &Planned<'_>, settled: bool) -> Value {
        let secret = self.secret;
        match self.show_manifests {
            None => Value::Unknown,
            Some(false) => Value::Null,
            Some(true) => {
                let managed = answer
                    .tree
                    .as_ref()
                    .and_then(|t| t.instance.managed.as_ref());
                match (managed, settled) {
                    (Some(managed), _) => manifests::value(managed, &self.prior.manifests, secret),
                    // No plan runs: what the state shows, else what the last run applied.
                    (None, true) if !self.prior.manifests.is_null() => self.prior.manifests.clone(),
                    (None, true) => match &answer.current {
                        Some(current) => manifests::value(current, &Value::Null, secret),
                        None => Value::Unknown,
                    },
                    _ => Value::Unknown,
                }
            }
        }
    }
}

/// The computed attributes a plan fills besides the engine's views.
struct Finished {
    plan: Option<Attr<String>>,
    effective: Option<BTreeMap<String, String>>,
    digest: Option<String>,
    /// `plan_status` and `objects` when a plan runs, as far as they are known.
    plan_status: Value,
    objects: Attr<BTreeMap<String, ManagedObject>>,
    also_replace: Vec<AttributePath>,
    diagnostics: Vec<Diagnostic>,
}

/// Fills the computed attributes: kept from the prior state when no plan runs, else
/// the plan's name and unknowns for what the run decides.
fn finish(
    schema: &tfplugin::Schema,
    prior_state: &Value,
    prior: &InstanceModel,
    mut planned: InstanceModel,
    f: Finished,
) -> PlanResponse {
    match f.plan {
        None => {
            // Nothing to do: keep what the state says.
            planned.status = prior.status.clone();
            planned.last_plan = prior.last_plan.clone();
            planned.objects = prior.objects.clone();
            planned.effective_parameters = prior.effective_parameters.clone();
            planned.operator_digest = prior.operator_digest.clone();
            planned.outputs = prior.outputs.clone();
            planned.preview = prior.preview.clone();
            planned.summary = prior.summary.clone();
            planned.plan_steps = prior.plan_steps.clone();
            planned.drifted_fields = prior.drifted_fields.clone();
            planned.plan_status = prior.plan_status.clone();
        }
        Some(plan_name) => {
            planned.last_plan = plan_name;
            planned.status = Attr::Unknown;
            planned.objects = f.objects;
            planned.effective_parameters = f.effective.map_or(Attr::Unknown, Attr::Known);
            planned.operator_digest = f.digest.map_or(Attr::Unknown, Attr::Known);
            // What the last refresh found, until the next one: the run takes the fields
            // back, and `summary` shows each (a plan that emptied this attribute would
            // print every drifted value again, as removed).
            planned.drifted_fields = prior.drifted_fields.clone();
            planned.plan_status = f.plan_status;
        }
    }
    let planned = planned.into_value();
    let mut requires_replace = schema.requires_replace(prior_state, &planned);
    requires_replace.extend(f.also_replace);
    PlanResponse {
        requires_replace,
        planned_state: planned,
        planned_private: Vec::new(),
        diagnostics: f.diagnostics,
    }
}
