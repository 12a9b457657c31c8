//! A refresh of an instance and every dependency instance below it: their plan status,
//! the uids of their objects, and what changed outside Terraform (objects removed or
//! created again, fields another manager changed), decided by the drift mode.
//!
//! Only objects whose applied fields changed since the last apply (their fingerprint,
//! [`super::applied_fields_fingerprint`], differs from the recorded one) are compared
//! field by field: each such object is dry-run as the last plan applies it and compared
//! with the live one ([`super::field_drift`]).

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;
use kudo_package::Package;
use kudo_plan::RunStatus;

use super::decisions::{DependencyRecord, DependencyRecords, TreeRecord};
use super::drift::{FieldDrift, IgnoredPath, NotAFieldPath, field_drift};
use super::error::EngineError;
use super::instance_object::InstanceObject;
use super::instance_object::instance_ref;
use super::run::RunRequest;
use crate::cluster::{Cluster, ClusterError, ObjectRef};
use kudo_plan::status::PlanStatus;
use kudo_plan::status::plan_status_of;

/// What a refresh does with fields changed outside Terraform.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DriftMode {
    /// Report them, and plan the apply that takes them back.
    #[default]
    Correct,
    /// Report them and warn; the apply leaves them.
    Warn,
    /// Do not look.
    Ignore,
}

impl DriftMode {
    pub const VALUES: [&'static str; 3] = ["correct", "warn", "ignore"];

    pub fn parse(text: &str) -> Option<DriftMode> {
        match text {
            "correct" => Some(DriftMode::Correct),
            "warn" => Some(DriftMode::Warn),
            "ignore" => Some(DriftMode::Ignore),
            _ => None,
        }
    }
}

/// Drift settings as one level sets them: the provider block, or an instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriftSettings {
    /// None when this level leaves it to the outer one.
    pub mode: Option<DriftMode>,
    /// The `drift_ignore` rules ([`DriftSettings::ignore_path`]).
    pub(crate) ignore: Vec<IgnoredPath>,
}

impl DriftSettings {
    /// Adds a `drift_ignore` rule as written: `kind` (blank for every kind) and a dotted
    /// field `path` (`[*]` for any list item), whose changes are not drift. A path that
    /// is empty, or starts or ends with a dot, would cover nothing or everything by
    /// accident: refused.
    pub fn ignore_path(&mut self, kind: Option<&str>, path: &str) -> Result<(), NotAFieldPath> {
        self.ignore.push(IgnoredPath::parse(kind, path)?);
        Ok(())
    }

    /// These settings over `outer`'s (an instance's over the provider's): the inner
    /// mode wins, the ignore rules of both apply.
    pub fn over(&self, outer: &DriftSettings) -> DriftSettings {
        DriftSettings {
            mode: self.mode.or(outer.mode),
            ignore: outer.ignore.iter().chain(&self.ignore).cloned().collect(),
        }
    }

    /// The mode in effect ([`DriftMode::Correct`] when no level set one).
    pub fn mode(&self) -> DriftMode {
        self.mode.unwrap_or_default()
    }
}

/// What the state records of the instance, for a refresh.
#[derive(Debug, Clone, Copy)]
pub struct RefreshRequest<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    /// The instance's parameters as the state records them (the sensitive ones are
    /// read from its Secret).
    pub parameters: &'a BTreeMap<String, String>,
    /// The OperatorVersion it runs: (namespace, name).
    pub operator_version: Option<(&'a str, &'a str)>,
    pub seed: Option<&'a str>,
    pub last_plan: &'a str,
    /// The status the state records: kept when the Instance says nothing of its plan.
    pub status: Option<&'a RunStatus>,
    /// Its objects with the uids the state knows.
    pub objects: &'a [(ObjectRef, Option<String>)],
    /// The fingerprints recorded for `objects` (empty when none were).
    pub fingerprints: &'a [String],
    /// The record of its tree (what each dependency instance owns).
    pub record: &'a TreeRecord,
    /// The instance's drift settings over the provider's ([`DriftSettings::over`]).
    pub drift: &'a DriftSettings,
}

/// What a refresh found.
#[derive(Debug, Clone, Default)]
pub struct Refreshed {
    /// The instance's status: its last plan's, or [`RunStatus::Drifted`] when its
    /// objects or a dependency instance's changed and the mode corrects them.
    pub status: Option<RunStatus>,
    pub plan_status: Option<PlanStatus>,
    /// The uid of each of `objects` now (None: gone).
    pub uids: Vec<Option<String>>,
    /// The fingerprints to record: the current ones, except that a drifted object keeps
    /// the recorded one, so that the next refresh compares it again.
    pub fingerprints: Vec<String>,
    /// The record of the tree to keep: what each dependency instance owns, with its
    /// fingerprints as for `fingerprints`, and the objects the apply must apply again, by
    /// instance (gone, created again, or with drifted fields; none unless the mode
    /// corrects). Nothing a plan handed over survives a refresh.
    pub record: TreeRecord,
    /// Fields changed outside Terraform, by instance (the instance's or a dependency
    /// instance's name).
    pub drift: Vec<(String, FieldDrift)>,
    /// The instance's sensitive values (to redact what is shown), when read: for drift
    /// compared, and when the plan status carries a message.
    pub sensitive: BTreeMap<String, String>,
    /// Why drift could not be compared for some instance (the next refresh tries again).
    pub unchecked: Vec<String>,
}

/// Refreshes the instance `req` describes; `Ok(None)` when its Instance is gone.
pub async fn refresh(
    cluster: &Cluster,
    req: &RefreshRequest<'_>,
) -> Result<Option<Refreshed>, ClusterError> {
    // The objects the state records are read beside the Instance rather than after it:
    // they do not depend on what it says, and a refresh waits on one round trip less
    // (wasted only when the Instance is gone).
    let refs: Vec<ObjectRef> = req.objects.iter().map(|(r, _)| r.clone()).collect();
    let instance_ref = instance_ref(req.namespace, req.name);
    let instance = cluster.get(&instance_ref);
    let own = Observed::read(cluster, &refs, req.name);
    let children = join_all(
        req.record
            .dependencies
            .iter()
            .map(|(name, record)| Observed::read(cluster, &record.inventory, name)),
    );
    let (instance, own, children) = futures::join!(instance, own, children);
    let Some(instance) = instance? else {
        return Ok(None);
    };
    let mut out = Refreshed {
        status: InstanceObject::from_value(&instance)
            .plan_status(req.last_plan)
            .map(|s| RunStatus::parse(Some(&s)))
            .or_else(|| req.status.cloned()),
        plan_status: plan_status_of(&instance, req.last_plan),
        ..Default::default()
    };
    let own = own?;
    out.uids = own.iter().map(|o| o.uid.clone()).collect();
    let complete = out.status == Some(RunStatus::Complete);
    // A missing object, or one deleted and created again out of band (a new uid), may
    // not hold what the package renders. A uid the state never learned is no evidence.
    let gone: Vec<ObjectRef> = req
        .objects
        .iter()
        .zip(&own)
        .filter(|((_, known), now)| match (known, &now.uid) {
            (_, None) => true,
            (Some(known), Some(now)) => known != now,
            (None, Some(_)) => false,
        })
        .map(|((r, _), _)| r.clone())
        .collect();
    let looks = complete && req.drift.mode() != DriftMode::Ignore;
    let mut suspects: BTreeMap<String, Suspects> = BTreeMap::new();
    if looks {
        suspects.insert(
            req.name.to_string(),
            Suspects::of(&refs, &own, req.fingerprints),
        );
    }
    let mut gone_below: BTreeMap<String, Vec<ObjectRef>> = BTreeMap::new();
    for ((name, record), observed) in req.record.dependencies.iter().zip(children) {
        let observed = observed?;
        let missing: Vec<ObjectRef> = record
            .inventory
            .iter()
            .zip(&observed)
            .filter(|(_, o)| o.uid.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        if !missing.is_empty() {
            gone_below.insert(name.clone(), missing);
        }
        if looks {
            suspects.insert(
                name.clone(),
                Suspects::of(&record.inventory, &observed, &record.fingerprints),
            );
        }
        out.record.dependencies.insert(
            name.clone(),
            DependencyRecord {
                fingerprints: observed.iter().map(Observed::fingerprint).collect(),
                ..record.clone()
            },
        );
    }
    out.fingerprints = own.iter().map(Observed::fingerprint).collect();
    if !looks {
        // Not compared: what was recorded stays, to compare when drift is looked at.
        out.fingerprints = req.fingerprints.to_vec();
        out.record.dependencies = req.record.dependencies.clone();
    }
    if looks && suspects.values().any(|s| !s.refs.is_empty()) {
        out.sensitive = super::sensitive::read_sensitive(cluster, req.namespace, req.name)
            .await
            .unwrap_or_default();
        compare(cluster, req, &suspects, &mut out).await;
    }
    if complete && req.drift.mode() == DriftMode::Correct {
        let mut drifted = gone_below;
        if !gone.is_empty() {
            drifted
                .entry(req.name.to_string())
                .or_default()
                .extend(gone);
        }
        for (name, d) in &out.drift {
            drifted
                .entry(name.clone())
                .or_default()
                .push(d.object.clone());
        }
        for objects in drifted.values_mut() {
            objects.sort();
            objects.dedup_by(|a, b| a.same_object(b));
        }
        if !drifted.is_empty() {
            out.status = Some(RunStatus::Drifted);
        }
        out.record.drifted = drifted;
    }
    if out.status == Some(RunStatus::Drifted) {
        tracing::info!(instance = %req.name, drifted = ?out.record.drifted.keys().collect::<Vec<_>>(), "objects changed outside Terraform; the next plan applies them again");
    }
    // Only failure messages can quote a sensitive value; they are shown redacted.
    if out.sensitive.is_empty()
        && out
            .plan_status
            .as_ref()
            .is_some_and(PlanStatus::has_messages)
    {
        out.sensitive = super::sensitive::read_sensitive(cluster, req.namespace, req.name)
            .await
            .unwrap_or_default();
    }
    Ok(Some(out))
}

/// What the cluster holds of one object now.
#[derive(Debug, Clone, Default)]
struct Observed {
    uid: Option<String>,
    applied_fields: Option<String>,
}

impl Observed {
    async fn read(
        cluster: &Cluster,
        refs: &[ObjectRef],
        instance: &str,
    ) -> Result<Vec<Observed>, ClusterError> {
        let live = super::observe::live_objects(cluster, refs, instance, |obj| Observed {
            uid: obj
                .pointer("/metadata/uid")
                .and_then(serde_json::Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            applied_fields: super::observe::applied_fields_fingerprint(obj),
        })
        .await?;
        Ok(live.into_iter().map(Option::unwrap_or_default).collect())
    }

    fn fingerprint(&self) -> String {
        self.applied_fields.clone().unwrap_or_default()
    }
}

/// The objects of one instance someone else wrote to since the last apply, with the
/// fingerprints recorded for them.
#[derive(Debug, Default)]
struct Suspects {
    refs: Vec<ObjectRef>,
}

impl Suspects {
    fn of(refs: &[ObjectRef], observed: &[Observed], recorded: &[String]) -> Suspects {
        let known = recorded.len() == refs.len();
        Suspects {
            refs: refs
                .iter()
                .zip(observed)
                .enumerate()
                .filter(|(i, (_, now))| {
                    let before = recorded.get(*i).filter(|f| known && !f.is_empty());
                    now.uid.is_some()
                        && (now.applied_fields.is_none() || now.applied_fields.as_ref() != before)
                })
                .map(|(_, (r, _))| r.clone())
                .collect(),
        }
    }
}

/// Compares the suspects of every instance field by field; a drifted object keeps its
/// recorded fingerprint.
async fn compare(
    cluster: &Cluster,
    req: &RefreshRequest<'_>,
    suspects: &BTreeMap<String, Suspects>,
    out: &mut Refreshed,
) {
    let work = suspects
        .iter()
        .filter(|(_, s)| !s.refs.is_empty())
        .map(|(name, s)| async move {
            let found = match name == req.name {
                true => own_drift(cluster, req, &s.refs).await,
                false => dependency_drift(cluster, req, name, &s.refs).await,
            };
            (name.clone(), found)
        });
    for (name, found) in join_all(work).await {
        match found {
            Ok(drift) => {
                let drifted: HashSet<String> =
                    drift.iter().map(|d| d.object.qualified_label()).collect();
                keep_recorded(req, &name, &drifted, out);
                out.drift
                    .extend(drift.into_iter().map(|d| (name.clone(), d)));
            }
            Err(e) => {
                // Compared next time: the recorded fingerprints stay.
                let all: HashSet<String> = suspects[&name]
                    .refs
                    .iter()
                    .map(ObjectRef::qualified_label)
                    .collect();
                keep_recorded(req, &name, &all, out);
                out.unchecked.push(format!(
                    "instance {name}: {}",
                    kudo_plan::change::redact(&e.to_string(), &out.sensitive)
                ));
            }
        }
    }
}

/// Puts the recorded fingerprint back for `drifted` objects of instance `name`.
fn keep_recorded(
    req: &RefreshRequest<'_>,
    name: &str,
    drifted: &HashSet<String>,
    out: &mut Refreshed,
) {
    let (refs, recorded, now): (Vec<&ObjectRef>, &[String], &mut Vec<String>) =
        match name == req.name {
            true => (
                req.objects.iter().map(|(r, _)| r).collect(),
                req.fingerprints,
                &mut out.fingerprints,
            ),
            false => {
                let (Some(record), Some(fresh)) = (
                    req.record.dependencies.get(name),
                    out.record.dependencies.get_mut(name),
                ) else {
                    return;
                };
                (
                    record.inventory.iter().collect(),
                    &record.fingerprints,
                    &mut fresh.fingerprints,
                )
            }
        };
    let known = recorded.len() == refs.len();
    for (i, r) in refs.iter().enumerate() {
        if drifted.contains(&r.qualified_label())
            && let Some(slot) = now.get_mut(i)
        {
            *slot = recorded
                .get(i)
                .filter(|_| known)
                .cloned()
                .unwrap_or_default();
        }
    }
}

/// Field drift of the instance's own suspects: its last plan dry-run as the apply
/// would send it, for those objects only.
async fn own_drift(
    cluster: &Cluster,
    req: &RefreshRequest<'_>,
    suspects: &[ObjectRef],
) -> Result<Vec<FieldDrift>, EngineError> {
    let Some((ov_namespace, ov_name)) = req.operator_version else {
        return Ok(Vec::new());
    };
    // Not in the cluster any more: there is nothing to compare with.
    let Some(pkg) = super::operator::load_operator(cluster, ov_namespace, ov_name, None).await?
    else {
        return Ok(Vec::new());
    };
    let mut parameters = req.parameters.clone();
    parameters.extend(super::sensitive::read_sensitive(cluster, req.namespace, req.name).await?);
    let previous: Vec<ObjectRef> = req.objects.iter().map(|(r, _)| r.clone()).collect();
    let instance = Instance {
        name: req.name,
        package: &pkg,
        parameters: &parameters,
        seed: req.seed,
        plan: req.last_plan,
        previous: &previous,
    };
    instance.drift(cluster, req, suspects).await
}

/// Field drift of a dependency instance's suspects, from what its Instance records.
async fn dependency_drift(
    cluster: &Cluster,
    req: &RefreshRequest<'_>,
    name: &str,
    suspects: &[ObjectRef],
) -> Result<Vec<FieldDrift>, EngineError> {
    let Some(live) = cluster.get(&instance_ref(req.namespace, name)).await? else {
        return Ok(Vec::new());
    };
    let record = InstanceObject::from_value(&live);
    let ov_name = record.spec.operator_version.name.clone();
    let Some(pkg) = super::operator::load_operator(cluster, req.namespace, &ov_name, None).await?
    else {
        return Ok(Vec::new());
    };
    let parameters = record.parameters();
    let plan = record
        .last_plan()
        .unwrap_or_else(|| kudo_plan::DEFAULT_PLAN.to_string());
    let seed = dependency_seed(req.seed, req.name, name, &req.record.dependencies);
    let previous = req
        .record
        .dependencies
        .get(name)
        .map(|r| r.inventory.clone())
        .unwrap_or_default();
    let instance = Instance {
        name,
        package: &pkg,
        parameters: &parameters,
        seed: seed.as_deref(),
        plan: &plan,
        previous: &previous,
    };
    instance.drift(cluster, req, suspects).await
}

/// A dependency instance's render seed: derived from its parent's, up to the top
/// instance's (see [`kudo_plan::child_seed`]).
fn dependency_seed(
    top_seed: Option<&str>,
    top: &str,
    name: &str,
    records: &DependencyRecords,
) -> Option<String> {
    let mut chain = vec![name.to_string()];
    let mut current = name;
    while let Some(record) = records.get(current) {
        if record.parent == top || record.parent.is_empty() {
            break;
        }
        chain.push(record.parent.clone());
        current = &record.parent;
    }
    let mut seed = top_seed.map(str::to_string);
    for child in chain.iter().rev() {
        seed = kudo_plan::child_seed(seed.as_deref(), child);
    }
    seed
}

/// One instance as its last run left it.
struct Instance<'a> {
    name: &'a str,
    package: &'a Package,
    parameters: &'a BTreeMap<String, String>,
    seed: Option<&'a str>,
    plan: &'a str,
    previous: &'a [ObjectRef],
}

impl Instance<'_> {
    async fn drift(
        &self,
        cluster: &Cluster,
        req: &RefreshRequest<'_>,
        suspects: &[ObjectRef],
    ) -> Result<Vec<FieldDrift>, EngineError> {
        let wanted: HashSet<_> = suspects.iter().map(ObjectRef::identity).collect();
        let request = RunRequest {
            package: self.package,
            instance: self.name,
            namespace: req.namespace,
            parameters: self.parameters,
            plan: self.plan,
            previous_inventory: self.previous,
            // Only this instance's own objects are compared here.
            dependencies: None,
            render_seed: self.seed,
            crd_deletion: super::removal::CrdDeletion::default(),
            // A dry-run for drift: nothing is written.
            crd_safety: super::crd_safety::CrdSafety::Off,
            health: &super::readiness::HealthPolicy::Kudo,
            progress: None,
            tree: Default::default(),
        };
        let planned = super::preview::preview_plan_only(cluster, request, &|r| {
            wanted.contains(&r.identity())
        })
        .await?;
        field_drift(cluster, &planned, &req.drift.ignore).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: &str, path: &str) -> IgnoredPath {
        IgnoredPath {
            kind: Some(kind.to_string()),
            path: path.to_string(),
        }
    }

    #[test]
    fn an_instance_mode_wins_and_ignore_rules_add_up() {
        let provider = DriftSettings {
            mode: Some(DriftMode::Warn),
            ignore: vec![rule("Deployment", "spec.replicas")],
        };
        let instance = DriftSettings {
            mode: None,
            ignore: vec![rule("StatefulSet", "spec.replicas")],
        };
        let both = instance.over(&provider);
        assert_eq!(both.mode(), DriftMode::Warn);
        assert_eq!(
            both.ignore,
            [provider.ignore[0].clone(), instance.ignore[0].clone()]
        );
        let own = DriftSettings {
            mode: Some(DriftMode::Ignore),
            ..instance
        };
        assert_eq!(own.over(&provider).mode(), DriftMode::Ignore);
        assert_eq!(DriftSettings::default().mode(), DriftMode::Correct);
    }
}
