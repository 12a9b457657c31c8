//! `kudo_operator`: KUDO's Operator and OperatorVersion objects for one package.

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, Attr, AttributePath, Diagnostic, IdentitySchema, ImportResponse,
    ImportedResource, IntoValue, PlanRequest, PlanResponse, ReadRequest, ReadResponse, Resource,
    Schema, Value,
};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, OperatorFailure, OperatorRequest, TreeLoadError};

use kudo_package::Package;
use kudo_resolve::{PlannedTree, Resolution};

use super::packages::{self, parse_operator_id};
use super::resolve::{Dependency, overrides_of, resolution_graph, resolution_values, tree_error};
use super::{Call, DEFAULT_NAMESPACE, Session, decode, namespace_of, schema};

tfplugin::model! {
    /// A `kudo_operator` value: configuration, plan or state.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct OperatorModel {
        pub package: Attr<String>,
        pub namespace: Attr<String>,
        pub create_namespace: Attr<bool>,
        pub id: Attr<String>,
        pub name: Attr<String>,
        pub operator_version: Attr<String>,
        pub app_version: Attr<String>,
        pub operator_version_name: Attr<String>,
        /// A value: its entries may be unknown while planning.
        pub dependency_overrides: Value,
        pub dependencies: Attr<Vec<Dependency>>,
        pub install_order: Attr<Vec<String>>,
        pub graph: Attr<String>,
        pub digest: Attr<String>,
    }
}

/// The `kudo_operator` resource type.
pub struct Operator;

#[async_trait]
impl Resource<Call> for Operator {
    fn name(&self) -> &'static str {
        schema::OPERATOR
    }

    fn schema(&self) -> Schema {
        schema::operator()
    }

    async fn read(&self, call: &Call, req: ReadRequest) -> ReadResponse {
        read(&call.session, req).await
    }

    async fn plan(&self, call: &Call, req: PlanRequest) -> PlanResponse {
        plan(&call.session, req).await
    }

    async fn apply(&self, call: &Call, req: ApplyRequest) -> ApplyResponse {
        apply(&call.session, req, &call.cancel).await
    }

    async fn import(&self, call: &Call, id: &str) -> ImportResponse {
        import(&call.session, id).await
    }

    fn identity(&self) -> Option<IdentitySchema> {
        Some(super::identity::operator())
    }

    async fn import_identity(&self, call: &Call, identity: &Value) -> ImportResponse {
        match super::identity::operator_by_identity(&call.session, identity).await {
            Ok((namespace, pkg)) => imported(&pkg, &namespace),
            Err(d) => super::import_failed(d),
        }
    }
}

/// The resource's state for a loaded package (without the dependency attributes).
fn state_for(pkg: &Package, package: Attr<String>, namespace: &str) -> OperatorModel {
    let ov_name = pkg.operator_version_name();
    OperatorModel {
        package,
        namespace: namespace.into(),
        id: format!("{namespace}/{ov_name}").into(),
        name: pkg.operator.name.as_str().into(),
        operator_version: pkg.operator.operator_version.as_str().into(),
        app_version: pkg.operator.app_version.clone().into(),
        digest: packages::digest(pkg).into(),
        operator_version_name: ov_name.into(),
        ..Default::default()
    }
}

/// `state` with the dependency attributes of `resolution` and the configured overrides.
fn with_resolution(
    mut state: OperatorModel,
    resolution: &Resolution,
    overrides: Value,
) -> OperatorModel {
    let (deps, order) = resolution_values(resolution);
    state.dependency_overrides = overrides;
    state.dependencies = Attr::Known(deps);
    state.install_order = Attr::Known(order);
    state.graph = Attr::Known(resolution_graph(resolution));
    state
}

/// The planned state for `pkg` and its tree in `namespace`: the tree unknown when the
/// plan could not let the cluster's version steer it (`offline`), since the apply's
/// plan, connected, might choose other dependency versions.
fn planned_state(
    pkg: &Package,
    resolution: &Resolution,
    proposed: &OperatorModel,
    namespace: &str,
    offline: bool,
) -> OperatorModel {
    let mut planned = with_resolution(
        state_for(pkg, proposed.package.clone(), namespace),
        resolution,
        proposed.dependency_overrides.clone(),
    );
    planned.create_namespace = proposed.create_namespace.clone();
    if resolution.known(pkg, !offline).is_none() {
        planned.dependencies = Attr::Unknown;
        planned.install_order = Attr::Unknown;
        planned.graph = Attr::Unknown;
    }
    planned
}

pub async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
    let exists = !req.prior_state.is_null();
    let mut resp = plan_inner(session, req).await;
    if exists {
        super::diag::with_destroy_advice(&mut resp.diagnostics);
    }
    resp
}

/// The plan when the package path depends on something not known yet (or on a
/// cluster the plan cannot reach): everything computed is unknown too.
fn plan_unknown(req: &PlanRequest, proposed: &OperatorModel) -> PlanResponse {
    let schema = schema::operator();
    let mut planned: OperatorModel = match schema
        .mark_computed_unknown(&req.proposed_new_state)
        .decode()
    {
        Ok(p) => p,
        Err(d) => return PlanResponse::refused(vec![d]),
    };
    if proposed.namespace.is_null() {
        planned.namespace = DEFAULT_NAMESPACE.into();
    }
    let planned = planned.into_value();
    PlanResponse {
        requires_replace: schema.requires_replace(&req.prior_state, &planned),
        planned_state: planned,
        ..Default::default()
    }
}

async fn plan_inner(session: &Session, req: PlanRequest) -> PlanResponse {
    let proposed: OperatorModel = match decode(&req.proposed_new_state) {
        Ok(Some(p)) => p,
        Ok(None) => return PlanResponse::default(),
        Err(d) => return PlanResponse::refused(d),
    };
    let Attr::Known(source) = &proposed.package else {
        return plan_unknown(&req, &proposed);
    };
    // A namespace known only at apply comes from another resource, which creates it
    // first: it is checked then.
    if proposed.namespace.is_unknown() {
        return plan_unknown(&req, &proposed);
    }
    if !proposed.dependency_overrides.is_fully_known() {
        return PlanResponse {
            planned_state: schema::operator().mark_computed_unknown(&req.proposed_new_state),
            ..Default::default()
        };
    }
    // The cluster's version checks the package's kubernetesVersion and steers the
    // choice of dependency versions; offline (settings not known yet) the plan goes on
    // unchecked and the apply connects and checks again.
    let cluster = match session.planning_cluster().await {
        Ok(c) => c,
        Err(d) => return PlanResponse::refused(vec![d]),
    };
    let overrides = overrides_of(&proposed.dependency_overrides);
    // The second plan of a change (Terraform 1.16+ hands back what the first planned):
    // exactly the packages the first plan resolved, or the provider's refusal.
    let planned = PlannedTree::from_private(&req.planned_private, source);
    let namespace = namespace_of(&proposed.namespace);
    let sources = packages::load_context(&session.config.repositories);
    let request = OperatorRequest {
        namespace: &namespace,
        package: source,
        sources: &sources,
        overrides: &overrides,
        planned: planned.as_ref(),
        planned_digest: None,
        create_namespace: creates_namespace(&proposed.create_namespace),
        previous: None,
    };
    let offline = session.config.offline();
    // What the apply would meet is checked only when there is an apply: a plan that
    // changes nothing (the refresh just read the Operator and OperatorVersion) asks
    // nothing more of the cluster.
    // The planned state it compares is kept for the answer.
    let mut compared = None;
    let applies = |pkg: &Package, resolution: &Resolution| {
        let planned = planned_state(pkg, resolution, &proposed, &namespace, offline).into_value();
        let differs = planned != req.prior_state;
        compared = Some(planned);
        differs
    };
    let (pkg, resolution) = match engine::plan_operator(cluster.as_ref(), &request, applies).await {
        Ok(r) => r,
        // Read from a cluster the plan cannot reach yet (offline): known at apply.
        Err(OperatorFailure::Load(e)) if matches!(*e, TreeLoadError::NoCluster { .. }) => {
            return plan_unknown(&req, &proposed);
        }
        Err(failure) => {
            let d = plan_failure(session, failure, &namespace, "");
            return PlanResponse::refused(vec![d]);
        }
    };
    let mut diagnostics: Vec<Diagnostic> = kudo_package::warnings(&pkg)
        .into_iter()
        .map(|w| {
            Diagnostic::warning("Operator package verification", w.to_string())
                .with_attribute(AttributePath::attribute("package"))
        })
        .collect();
    // Offline, the cluster's version could not steer the choice of dependency versions:
    // a tree it might have changed is known only at apply, where Terraform plans again
    // connected and the two plans must agree.
    let known = resolution.known(&pkg, !offline);
    // Instances' plans read the package (and its tree, when known) from this copy; an
    // unknown tree removes an older one, so they show their children as unknown.
    if let Err(e) = packages::plan_cache().store_tree(&namespace, &pkg, known) {
        // Only plan-time checks of instances depend on the copy; apply reads the cluster.
        diagnostics.push(Diagnostic::warning(
            "Could not keep a plan-time copy of the package",
            format!(
                "Instances of this operator cannot check their parameters during this plan: {e}"
            ),
        ));
    }
    diagnostics.extend(super::resolve::unused_override_warnings(&resolution));
    let planned = compared.unwrap_or_else(|| {
        planned_state(&pkg, &resolution, &proposed, &namespace, offline).into_value()
    });
    // What this plan resolved, for the apply (see kudo_resolve::planned).
    let record = PlannedTree::record(source, &pkg, known);
    PlanResponse {
        requires_replace: schema::operator().requires_replace(&req.prior_state, &planned),
        planned_state: planned,
        planned_private: record.map(|r| r.to_private()).unwrap_or_default(),
        diagnostics,
    }
}

pub async fn apply(
    session: &Session,
    req: ApplyRequest,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let fail =
        |state: Value, diagnostics: Vec<Diagnostic>| ApplyResponse::failed(state, diagnostics);
    let (prior, planned) = match (
        decode::<OperatorModel>(&req.prior_state),
        decode::<OperatorModel>(&req.planned_state),
    ) {
        (Ok(prior), Ok(planned)) => (prior, planned),
        (Err(d), _) | (_, Err(d)) => return fail(req.prior_state, d),
    };
    let cluster = match session.cluster_for_change(planned.is_none()).await {
        Ok(c) => c,
        Err(d) => return fail(req.prior_state, vec![d]),
    };
    let Some(planned) = planned else {
        return match prior {
            Some(prior) => destroy(session, &cluster, req.prior_state, &prior, cancel).await,
            // Nothing planned and nothing there: nothing to do.
            None => ApplyResponse::default(),
        };
    };
    let source = planned.package.as_deref().unwrap_or_default().to_string();
    let overrides = overrides_of(&planned.dependency_overrides);
    // Exactly what the plan resolved (checked again, before anything is written).
    let pins = PlannedTree::from_private(&req.planned_private, &source);
    let namespace = namespace_of(&planned.namespace);
    let sources = packages::load_context(&session.config.repositories);
    let previous = prior.as_ref().map(installed_tree);
    // A null digest (never planned so) counts as a change, as any value but unknown does.
    let planned_digest = match &planned.digest {
        Attr::Unknown => None,
        Attr::Null => Some(""),
        Attr::Known(d) => Some(d.as_str()),
    };
    let request = OperatorRequest {
        namespace: &namespace,
        package: &source,
        sources: &sources,
        overrides: &overrides,
        planned: pins.as_ref(),
        planned_digest,
        create_namespace: creates_namespace(&planned.create_namespace),
        previous: previous.as_ref(),
    };
    let root_name = planned.name.as_deref().unwrap_or_default();
    let applied = match engine::apply_operator(&cluster, &request, cancel).await {
        Ok(applied) => applied,
        Err(failure) => {
            let diagnostics = apply_failure(session, &namespace, root_name, failure);
            return fail(req.prior_state, diagnostics);
        }
    };
    let (pkg, resolution) = (&applied.package, &applied.resolution);
    // Instances read their dependency tree from this copy; the plan may have been made
    // elsewhere (a saved plan file), so the apply keeps it too.
    let known = resolution.known(pkg, !session.config.offline());
    if let Err(e) = packages::plan_cache().store_tree(&namespace, pkg, known) {
        tracing::warn!(error = %e, "could not keep a copy of the dependency tree");
    }
    if let Some(previous) = &previous {
        keep_copies(&previous.namespace, &applied.stale);
    }
    let mut state = with_resolution(
        state_for(pkg, planned.package.clone(), &namespace),
        resolution,
        planned.dependency_overrides.clone(),
    );
    state.create_namespace = planned.create_namespace.clone();
    ApplyResponse {
        new_state: state.into_value(),
        diagnostics: applied
            .stale_left
            .iter()
            .map(|left| Diagnostic::warning(left.stale_summary(), left.stale_detail()))
            .collect(),
        ..Default::default()
    }
}

/// Keeps a plan-time copy of each version the install removed: instances of this
/// configuration move off them later in the same apply, and one that fails with
/// `rollback_on_failure` goes back to its version (its plan, made right before its
/// apply, reads the copy; a saved plan may be applied where no copy was made).
fn keep_copies(namespace: &str, removed: &[Package]) {
    for old in removed {
        if let Err(e) = packages::plan_cache().store(namespace, old) {
            tracing::warn!(error = %e, "could not keep a copy of a version being removed");
        }
    }
}

/// Whether `create_namespace` asks for the namespace (null and unknown do not).
fn creates_namespace(create_namespace: &Attr<bool>) -> bool {
    create_namespace.known() == Some(&true)
}

/// What a state installed, for the engine.
fn installed_tree(state: &OperatorModel) -> engine::InstalledTree {
    let dependencies = state.dependencies.known().map(Vec::as_slice);
    let dependencies = dependencies.unwrap_or_default().iter();
    engine::InstalledTree::recorded(
        namespace_of(&state.namespace),
        (
            state.name.as_deref().unwrap_or_default(),
            state.operator_version_name.as_deref().unwrap_or_default(),
        ),
        dependencies.map(|d| (d.package.as_deref(), d.operator_version_name.as_deref())),
        state.install_order.known().cloned().unwrap_or_default(),
        creates_namespace(&state.create_namespace),
    )
}

/// The plan's error for what the apply would meet ([`engine::plan_operator`]): on
/// `namespace` (or `create_namespace`) for the namespace, else on `package`.
fn plan_failure(
    session: &Session,
    failure: OperatorFailure,
    namespace: &str,
    root_name: &str,
) -> Diagnostic {
    let summary = failure.summary(root_name);
    match failure {
        OperatorFailure::Namespace(problem) => {
            return super::namespace::diagnostic(session, namespace, &problem);
        }
        // Already on `package`.
        OperatorFailure::Load(e) => return tree_error(session, *e),
        OperatorFailure::Changed { package } => changed(&package),
        OperatorFailure::Crds(e) => {
            let mut d = session.cluster_error(&summary, &e);
            d.detail = format!(
                "KUDO's CustomResourceDefinitions (operators.kudo.dev, operatorversions.kudo.dev, instances.kudo.dev) are not installed in this cluster, and these credentials may not install them. A cluster administrator installs them once (with the provider's `kudo_operator` and the kudo-admin ClusterRole of docs/guides/permissions.md, or with `kubectl kudo init --crd-only`); after that, credentials with rights in their namespace only are enough.\n\n{}",
                d.detail
            );
            d
        }
        OperatorFailure::Package { error, .. } => session.engine_error(&summary, &error),
    }
    .with_attribute(AttributePath::attribute("package"))
}

/// The apply's diagnostics for a failed apply of `root`'s tree in `namespace`: the
/// error, and a warning for each OperatorVersion the failed create could not take back.
fn apply_failure(
    session: &Session,
    namespace: &str,
    root_name: &str,
    failure: OperatorFailure,
) -> Vec<Diagnostic> {
    let summary = failure.summary(root_name);
    match failure {
        OperatorFailure::Namespace(problem) => {
            vec![super::namespace::diagnostic(session, namespace, &problem)]
        }
        OperatorFailure::Load(e) => vec![tree_error(session, *e)],
        OperatorFailure::Changed { package } => {
            vec![changed(&package).with_attribute(AttributePath::attribute("package"))]
        }
        OperatorFailure::Crds(e) => vec![session.cluster_error(&summary, &e)],
        OperatorFailure::Package {
            error, left_behind, ..
        } => std::iter::once(session.engine_error(&summary, &error))
            .chain(left_behind.iter().map(|left| {
                Diagnostic::warning(left.left_behind_summary(), left.left_behind_detail())
            }))
            .collect(),
    }
}

/// The package at `source` is not the one Terraform planned with.
fn changed(source: &str) -> Diagnostic {
    Diagnostic::error(
        "Operator package changed after the plan",
        format!(
            "The package at {source:?} is not the one Terraform planned with. Run `terraform plan` again and review the new changes."
        ),
    )
}

/// Removes what `prior` installed; `prior_state` is the same state as Terraform sent
/// it, handed back unchanged when the destroy fails.
async fn destroy(
    session: &Session,
    cluster: &Cluster,
    prior_state: Value,
    prior: &OperatorModel,
    cancel: &CancellationToken,
) -> ApplyResponse {
    // This configuration's instances are gone by now (they depend on this resource);
    // versions other instances still run stay, with a warning.
    let tree = installed_tree(prior);
    match engine::destroy_operator(cluster, &tree, cancel).await {
        Ok(destroyed) => {
            let mut diagnostics = super::diag::kept_warnings(&destroyed.kept);
            if let Some(released) = &destroyed.namespace {
                diagnostics.extend(super::namespace::released(&tree.namespace, released));
            }
            ApplyResponse {
                diagnostics,
                ..Default::default()
            }
        }
        Err(e) => ApplyResponse::failed(
            prior_state,
            vec![session.destroy_error("Cannot remove the operator", &e)],
        ),
    }
}

pub async fn read(session: &Session, req: ReadRequest) -> ReadResponse {
    let state = req.current_state;
    let keep = |state: Value, diagnostics: Vec<Diagnostic>| ReadResponse {
        new_state: state,
        private: req.private.clone(),
        diagnostics,
    };
    let model = match decode::<OperatorModel>(&state) {
        Ok(m) => m.unwrap_or_default(),
        Err(d) => return keep(state, d),
    };
    let (Some(namespace), Some(ov_name)) = (
        model.namespace.as_deref(),
        model.operator_version_name.as_deref(),
    ) else {
        return keep(state, Vec::new());
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return keep(state, vec![d]),
    };
    // The state names the Operator: it is read beside its OperatorVersion.
    let operator = model.name.as_deref();
    match engine::load_operator(&cluster, namespace, ov_name, operator).await {
        // Deleted out of band: Terraform plans to create it again.
        Ok(None) => keep(Value::Null, Vec::new()),
        Ok(Some(pkg)) => {
            // A changed OperatorVersion shows up as a digest change, which plans an update.
            let fresh = OperatorModel {
                digest: packages::digest(&pkg).into(),
                ..model.clone()
            };
            keep(fresh.into_value(), Vec::new())
        }
        Err(e) => keep(
            state.clone(),
            vec![session.engine_error("Cannot read the operator", &e)],
        ),
    }
}

/// The state an import of `pkg` (an OperatorVersion in `namespace`) records.
pub fn imported_state(pkg: &Package, namespace: &str) -> OperatorModel {
    // The package source is not recorded in the cluster; the next plan takes it from
    // the configuration.
    let mut state = state_for(pkg, Attr::Null, namespace);
    // Without KudoOperator tasks or a `dependencies:` list the resolution is known without repositories:
    // record it, so the next plan shows only the `package` it cannot know (and `graph`,
    // left null: its root names the package's location, which the cluster does not keep).
    let has_dependencies =
        !pkg.operator.dependencies.is_empty() || kudo_plan::has_dependency_tasks(pkg);
    if !has_dependencies {
        state.dependencies = Attr::Known(Vec::new());
        state.install_order = Attr::Known(vec![pkg.operator_version_name()]);
    }
    state
}

/// The import's answer for `pkg` in `namespace`.
fn imported(pkg: &Package, namespace: &str) -> ImportResponse {
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::OPERATOR.to_string(),
            state: imported_state(pkg, namespace).into_value(),
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}

pub async fn import(session: &Session, id: &str) -> ImportResponse {
    let fail = super::import_failed;
    let Some((namespace, ov_name)) = parse_operator_id(id) else {
        return fail(Diagnostic::error(
            "Invalid import id",
            format!("{id:?} is not `<namespace>/<operatorversion-name>`."),
        ));
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return fail(d),
    };
    match engine::load_operator(&cluster, namespace, ov_name, None).await {
        Ok(Some(pkg)) => imported(&pkg, namespace),
        Ok(None) => fail(Diagnostic::error(
            "Nothing to import",
            format!("There is no OperatorVersion {ov_name} in namespace {namespace}."),
        )),
        Err(e) => fail(session.engine_error("Cannot read the operator", &e)),
    }
}
