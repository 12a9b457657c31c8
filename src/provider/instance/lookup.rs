//! Where the packages and the dependency tree of an instance come from: the copies
//! `kudo_operator` keeps for the plan (see `kudo_resolve::PlanCache`), else the cluster.

use kudo_engine::engine::PackageSource;
use kudo_package::{LoadContext, Package};
use kudo_resolve::Resolution;

use crate::provider::Session;
use crate::provider::packages::{self, parse_operator_id};

/// `kudo_operator`'s plan-time copy of the package `operator_id` names (it is what the
/// apply will install), when this process has one; the engine reads the cluster's when
/// not.
pub(super) fn plan_copy(operator_id: &str) -> Option<Package> {
    let (ns, ov_name) = parse_operator_id(operator_id)?;
    packages::plan_cache().load(ns, ov_name)
}

/// The dependency tree of `pkg` as `kudo_operator` recorded it in the plan cache (an
/// empty one for a package without dependencies), without resolving again; `None`
/// without it (the apply resolves it again).
pub(super) fn recorded_resolution(operator_id: &str, pkg: &Package) -> Option<Resolution> {
    kudo_plan::known_tree(pkg, || {
        parse_operator_id(operator_id)
            .and_then(|(ns, ov)| packages::plan_cache().load_resolution(ns, ov))
    })
}

/// What an apply or a destroy hands the engine about the package a `kudo_operator` id
/// names: the OperatorVersion, this process's plan-time copy and its recorded tree when
/// there are, and the provider's repositories to resolve the tree again from (the
/// engine reads the cluster's OperatorVersion either way: what it has is what runs).
pub(super) struct Installed {
    pub namespace: String,
    operator_version: String,
    pub copy: Option<Package>,
    pub recorded: Option<Resolution>,
    sources: LoadContext,
}

impl Installed {
    /// For `operator` (a `kudo_operator` id); `namespace` stands in for an id that does
    /// not parse (the engine then finds no OperatorVersion).
    pub(super) fn of(session: &Session, operator: &str, namespace: &str) -> Installed {
        let (ns, ov) = parse_operator_id(operator).unwrap_or((namespace, ""));
        let copy = packages::plan_cache().load(ns, ov);
        let recorded = copy.as_ref().and_then(|c| recorded_resolution(operator, c));
        Installed {
            namespace: ns.to_string(),
            operator_version: ov.to_string(),
            copy,
            recorded,
            sources: packages::load_context(&session.config.repositories),
        }
    }

    pub(super) fn source(&self) -> PackageSource<'_> {
        PackageSource::Installed {
            operator_version: &self.operator_version,
            copy: self.copy.as_ref(),
            sources: &self.sources,
        }
    }
}
