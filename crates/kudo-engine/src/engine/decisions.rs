//! What the apply does with each dependency instance of a tree (KudoOperator tasks,
//! KEP-29/36), as data: decided once by the plan ([`super::tree`]), handed to the apply
//! in Terraform's private state, executed by the run ([`super::run`]) as it is. Below
//! both, so the executor needs nothing of the planning above it.

use std::collections::BTreeMap;

use kudo_package::Package;
use kudo_plan::Location;
use serde::{Deserialize, Serialize};

use super::error::EngineError;
use crate::cluster::ObjectRef;

/// What Terraform state records of one dependency instance: the objects its runs
/// applied and their fingerprints (see [`super::applied_fields_fingerprint`]), and the
/// instance whose KudoOperator task made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyRecord {
    /// The instance whose task creates it.
    #[serde(default)]
    pub parent: String,
    #[serde(default)]
    pub operator: String,
    /// Its OperatorVersion's name.
    #[serde(default)]
    pub operator_version: String,
    /// What its runs applied, as for the top instance's `objects`.
    #[serde(default)]
    pub inventory: Vec<ObjectRef>,
    /// One per `inventory` entry ("" when unknown), compared by a refresh.
    #[serde(default)]
    pub fingerprints: Vec<String>,
}

/// Records of every dependency instance below one instance, by instance name.
pub type DependencyRecords = BTreeMap<String, DependencyRecord>;

/// What the engine keeps of an instance's tree from one call to the next, in the
/// caller's private state (Terraform's, stored with the state): what each dependency
/// instance owns and the objects a refresh found changed outside Terraform, as
/// [`super::refresh`] and the apply answer them, and what the final plan hands to the
/// apply right after it ([`super::Planned::record`]). The caller keeps it as it is:
/// serialized beside its own fields (`dependencies`, `drifted`, `checked`,
/// `every_object_checked`, `decided`, each left out when empty), it reads back whatever
/// part an older record lacks as empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeRecord {
    /// What each dependency instance owns, with fingerprints.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) dependencies: DependencyRecords,
    /// Objects the last refresh found changed outside Terraform, by instance (the
    /// instance's own name or a dependency instance's): the next apply applies them again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) drifted: BTreeMap<String, Vec<ObjectRef>>,
    /// Handed over by a plan whose dry-run covered the whole tree ([`TreePrior::checked`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) checked: bool,
    /// With `checked`: that dry-run judged every object ([`TreePrior::every_object_checked`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) every_object_checked: bool,
    /// With `checked`: that plan's decisions ([`TreePrior::decided`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decided: Option<TreeDecisions>,
}

impl TreeRecord {
    /// This record once the apply it was planned for has run (or was given up): what a
    /// plan handed over is spent, the records and drift stay.
    pub fn spent(self) -> TreeRecord {
        TreeRecord {
            checked: false,
            every_object_checked: false,
            decided: None,
            ..self
        }
    }

    /// The instance's own objects the last refresh found changed (`root`: its name).
    pub(crate) fn drifted_of(&self, root: &str) -> &[ObjectRef] {
        self.drifted.get(root).map_or(&[], Vec::as_slice)
    }

    /// The prior of a plan of the tree: the records and the drift (a plan hands over, it
    /// takes nothing handed). `fresh`: see [`TreePrior::fresh`]. The drift is keyed by
    /// instance, and only dependency instances are looked up in it: the instance's own
    /// entry, which has its name, is never one of theirs (they are Instances in its
    /// namespace, so none has its name).
    pub(crate) fn for_plan(&self, fresh: bool) -> TreePrior<'_> {
        TreePrior {
            records: Some(&self.dependencies),
            drifted: Some(&self.drifted),
            fresh,
            checked: false,
            every_object_checked: false,
            decided: None,
            confirmed: false,
        }
    }

    /// The prior of a run of the tree: [`TreeRecord::for_plan`]'s, with what the plan
    /// right before handed over.
    pub(crate) fn for_run(&self, fresh: bool) -> TreePrior<'_> {
        TreePrior {
            checked: self.checked,
            every_object_checked: self.checked && self.every_object_checked,
            decided: self.decided.as_ref(),
            ..self.for_plan(fresh)
        }
    }
}

/// The prior state of the dependency instances, as a plan or a run gets it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TreePrior<'a> {
    /// What the state records; an instance it does not record (a state written before
    /// records were kept, or an import) is found by its instance label instead.
    pub records: Option<&'a DependencyRecords>,
    /// Dependency instances whose objects changed outside Terraform, with those
    /// objects: they run their `deploy` plan again, taking the changes back.
    pub drifted: Option<&'a BTreeMap<String, Vec<ObjectRef>>>,
    /// The instance is created by this apply (a new one, or the create half of a
    /// replacement, whose destroy removes the old dependency instances first): its
    /// dependency instances are all created too, whatever of ours the cluster holds
    /// now, so that the plan made before the destroy is the one the apply makes.
    pub fresh: bool,
    /// The caller's planning call dry-ran this whole tree against the same cluster just
    /// before the run (Terraform plans every change again right before applying it):
    /// the run decides the tree but does not dry-run it a second time. Each step still
    /// checks its own objects before it writes them, unless `every_object_checked`.
    pub checked: bool,
    /// That dry-run judged every object of the tree, none left to the apply (a CRD or
    /// namespace the apply creates): the steps write without rehearsing their objects
    /// first, since the server took each of them moments ago.
    pub every_object_checked: bool,
    /// With `checked`: that plan's decisions for the whole tree ([`TreePlan::decisions`]),
    /// handed by the caller (Terraform's private state carries them from the final plan
    /// to the apply), so the apply runs what the plan decided without deciding again.
    pub decided: Option<&'a TreeDecisions>,
    /// Set by the run's caller once it found every object of `decided` as that plan
    /// did: nobody took, created or deleted one since, so the ownership check the plan
    /// made of each new object still holds and the run does not read them again.
    pub confirmed: bool,
}

impl<'a> TreePrior<'a> {
    /// The decisions the caller's plan handed over, when that plan checked the whole
    /// tree (`decided` with `checked`): what the run executes as it is.
    pub(crate) fn handed(&self) -> Option<&'a TreeDecisions> {
        self.decided.filter(|_| self.checked)
    }

    pub(crate) fn record(&self, instance: &str) -> Option<&DependencyRecord> {
        self.records.and_then(|r| r.get(instance))
    }

    pub(crate) fn redeploys(&self, instance: &str) -> bool {
        self.drifted.is_some_and(|r| r.contains_key(instance))
    }

    pub(crate) fn drifted_objects(&self, instance: &str) -> &[ObjectRef] {
        self.drifted
            .and_then(|d| d.get(instance))
            .map_or(&[], Vec::as_slice)
    }
}

/// What the apply does with one dependency instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum DependencyAction {
    /// It does not exist: its operator is installed and `plan` (deploy) runs.
    Create { plan: String },
    /// It exists and runs `plan`, for `reason`.
    Run { plan: String, reason: String },
    /// It exists and nothing about it or below it changes.
    Leave { reason: String },
    /// Its `enablingParameter` is off: it is uninstalled with everything below it.
    Remove,
}

impl DependencyAction {
    /// The plan it runs, if any.
    pub fn plan(&self) -> Option<&str> {
        match self {
            DependencyAction::Create { plan } | DependencyAction::Run { plan, .. } => Some(plan),
            DependencyAction::Leave { .. } | DependencyAction::Remove => None,
        }
    }
}

/// The apply's decision about one dependency instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyDecision {
    pub instance: String,
    /// The instance whose KudoOperator task makes it.
    pub parent: String,
    pub operator: String,
    /// Its OperatorVersion's name.
    pub operator_version: String,
    pub action: DependencyAction,
    /// What it owns before the apply: its record, else what carries its instance label.
    pub prior: Vec<ObjectRef>,
}

/// Every dependency instance of one instance, parents before their children, in the
/// order a run meets them: what the final plan decided and the apply executes, a value
/// that travels from one to the other (Terraform's private state) as it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TreeDecisions {
    pub dependencies: Vec<DependencyDecision>,
    /// What planning each of them needs, by instance name: only the planning call's
    /// (the packages come with the request), so never handed over.
    #[serde(skip)]
    pub(crate) nodes: BTreeMap<String, Node>,
    /// Every object the plan's dry-run judged, as it found it: the apply looks at them
    /// before its first write, and a change (someone took, created or deleted one)
    /// makes it check the tree again rather than run what no longer holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<Expected>,
}

/// An object of the plan ([`TreeDecisions::expected`]) as its dry-run found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    /// The instance of the tree that applies it.
    pub instance: String,
    pub object: ObjectRef,
    pub found: Found,
}

/// What a plan's dry-run found of one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// It did not exist: the apply creates it.
    Absent,
    /// It existed, held as the digest says (its uid and the other field managers'
    /// entries, see `observe::holders`).
    Held(String),
}

impl Found {
    /// How `obj` (a dry-run answer or a live object) is found.
    pub(crate) fn of(obj: Option<&serde_json::Value>) -> Found {
        match obj.and_then(super::observe::holders) {
            Some(digest) => Found::Held(digest),
            None => Found::Absent,
        }
    }
}

impl PartialEq for TreeDecisions {
    /// The decisions, not the planning call's working data.
    fn eq(&self, other: &Self) -> bool {
        self.dependencies == other.dependencies
    }
}

impl TreeDecisions {
    /// The decision about `instance`.
    pub fn get(&self, instance: &str) -> Option<&DependencyDecision> {
        self.dependencies.iter().find(|d| d.instance == instance)
    }

    /// Records of the dependency instances after a run: those that ran take the
    /// inventories their runs report, the ones left alone keep their prior ones, and
    /// removed ones are gone.
    pub fn records_after(&self, ran: &BTreeMap<String, Vec<ObjectRef>>) -> DependencyRecords {
        self.dependencies
            .iter()
            .filter(|d| d.action != DependencyAction::Remove)
            .map(|d| {
                let inventory = ran.get(&d.instance).cloned().unwrap_or(d.prior.clone());
                let record = DependencyRecord {
                    parent: d.parent.clone(),
                    operator: d.operator.clone(),
                    operator_version: d.operator_version.clone(),
                    fingerprints: vec![String::new(); inventory.len()],
                    inventory,
                };
                (d.instance.clone(), record)
            })
            .collect()
    }
}

/// What planning and running a dependency instance need, owned (the walk it comes
/// from borrows its parent's values).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub package: Package,
    pub parameters: BTreeMap<String, String>,
    pub seed: Option<String>,
    /// The parameters its Instance records, when it runs the same OperatorVersion:
    /// what the last run rendered with.
    pub prior_parameters: Option<BTreeMap<String, String>>,
    /// Where its parent's KudoOperator task sits.
    pub location: Location,
    pub task: String,
}

impl Node {
    /// `error`, met planning or running the dependency instance `instance`, as its
    /// parent's task reports it (the words of the run's KudoOperator step).
    pub(crate) fn wrap(&self, error: EngineError, instance: &str) -> EngineError {
        let mut wrapped = EngineError::new(format!("dependency instance {instance}"), error.fatal)
            .at(&self.location)
            .with_task(&self.task);
        wrapped.object = error
            .object
            .as_ref()
            .filter(|o| o.kind == "Instance" && o.name == instance)
            .cloned();
        wrapped.trouble = error.trouble;
        wrapped.caused_by(error)
    }
}
